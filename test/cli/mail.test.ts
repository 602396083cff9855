/**
 * Issue 28: `npm run admin -- mail list|retry|purge`, the operator's view of the outbox, while
 * the server runs. Never a mail's text.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { startMailCatcher, type MailCatcher } from '../helpers/smtp.ts';
import { runAdmin } from '../helpers/admin.ts';
import { startServer, tempDir, type TestServer } from '../helpers/server.ts';
import { waitUntil } from '../helpers/wait.ts';

let dir: string;
let server: TestServer;
let smtp: MailCatcher;
let refusing = true;

const admin = (...args: string[]) => runAdmin({ DATA_DIR: dir, SMTP_URL: smtp.url }, ...args);

beforeAll(async () => {
  dir = await tempDir();
  smtp = await startMailCatcher({ refuse: (to) => (refusing && to === 'bounced@example.org' ? 550 : null) });
  server = await startServer({ SMTP_URL: smtp.url }, dir);
});
afterAll(async () => {
  await server.close();
  await smtp.close();
  await rm(dir, { recursive: true, force: true });
});

describe('npm run admin -- mail', () => {
  it('lists a mail given up on, tries it again, and purges it once sent', { timeout: 120_000 }, async () => {
    const res = await new Client(server.url).post('/register', { token: 'dev-ok', email: 'bounced@example.org', password: 'Bounced-Once-1', fullname: 'Bo Bounce' });
    expect(res.status).toBe(200);
    await server.service.services.mailer.settled();

    const failed = await admin('mail', 'list', '--state', 'failed');
    expect(failed.code).toBe(0);
    const [line, ...rest] = failed.stdout.trim().split('\n');
    expect(rest).toEqual([]);
    expect(line?.split('\t')).toEqual([expect.stringMatching(/^\d+$/), 'failed', 'activation', 'bounced@example.org', '1 attempt', expect.stringMatching(/^\d{4}-/), 'given up', expect.stringMatching(/^EENVELOPE RCPT TO 550/)]);
    expect(failed.stdout).not.toMatch(/token=|code/i);
    expect(failed.stderr).toMatch(/^0 waiting \(the oldest for 0 s\), 1 failed$/m);
    expect((await admin('mail', 'list')).stdout).toBe('');

    refusing = false;
    const retried = await admin('mail', 'retry', '--all');
    expect(retried).toMatchObject({ code: 0, stdout: '1 mail to be tried again now\n' });
    await waitUntil(() => smtp.mails.some((m) => m.to === 'bounced@example.org'), 'the mail sent after the retry', 30_000);
    expect(smtp.mails.filter((m) => m.to === 'bounced@example.org')).toHaveLength(1);

    expect(await admin('mail', 'retry', '12345')).toMatchObject({ code: 1, stderr: expect.stringContaining('No failed or waiting mail') });
    expect(await admin('mail', 'purge')).toMatchObject({ code: 1, stderr: expect.stringContaining('say which mails') });
    await waitUntil(async () => (await admin('mail', 'list', '--state', 'sent')).stdout.includes('\tsent\t'), 'the mail marked sent', 30_000);
    // An empty or hexadecimal number is refused, never read as 0 (which would purge whatever the age).
    for (const olderThan of ['--older-than=', '--older-than=0x1']) expect(await admin('mail', 'purge', '--sent', olderThan)).toMatchObject({ code: 1 });
    expect(await admin('mail', 'list', '--state', 'sent', '--limit=')).toMatchObject({ code: 1 });
    expect(await admin('mail', 'purge', '--sent')).toMatchObject({ code: 0, stdout: '1 mail deleted\n' });
    expect((await admin('mail', 'list', '--state', 'all')).stdout).toBe('');
  });

  it('retry, with the server stopped and a mail server slower than a shutdown waits: the command waits, records the mail sent, and it is never sent again', { timeout: 120_000 }, async () => {
    const slowDir = await tempDir();
    let slow = false;
    const catcher = await startMailCatcher({
      refuse: (to) => (!slow && to === 'slow@example.org' ? 550 : null),
      // Past the 10 s the command gives due mail and the 5 s a shutdown gives a mail being sent.
      hold: () => new Promise((resolve) => setTimeout(resolve, slow ? 16_000 : 0)),
    });
    try {
      const first = await startServer({ SMTP_URL: catcher.url }, slowDir);
      expect((await new Client(first.url).post('/register', { token: 'dev-ok', email: 'slow@example.org', password: 'Slow-Mail-Server-1', fullname: 'Slo Mail' })).status).toBe(200);
      await first.service.services.mailer.settled();
      await first.close();
      slow = true;
      const retried = await runAdmin({ DATA_DIR: slowDir, SMTP_URL: catcher.url }, 'mail', 'retry', '--all');
      expect(retried).toMatchObject({ code: 0, stdout: '1 mail to be tried again now\n' });
      expect(retried.stderr).not.toMatch(/Error|at /);
      expect(catcher.mails.filter((m) => m.to === 'slow@example.org')).toHaveLength(1);
      // Recorded as sent: the next process has nothing to send again.
      const sent = await runAdmin({ DATA_DIR: slowDir, SMTP_URL: catcher.url }, 'mail', 'list', '--state', 'sent');
      expect(sent.stdout).toMatch(/\tsent\tactivation\tslow@example\.org\t\d+ attempts?\t/);
    } finally {
      await catcher.close();
      await rm(slowDir, { recursive: true, force: true });
    }
  });
});
