/**
 * Issue 12, defect 14 (timing of the mail forms). The attack: `POST /resettable` and
 * `POST /activatable` answer the same body for a known and an unknown id, but only a known one
 * had its token written and its mail sent inside the request, so a known id took as long as
 * the mail server (hundreds of milliseconds over SMTP) and an unknown one did not: timing told
 * who has an account. Now the token and the mail are made after the answer, on a queue.
 *
 * Here the SMTP server holds every message for two seconds: an answer that waited for the mail
 * would take that long.
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { readOutbox } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser } from '../helpers/users.ts';

const SMTP_DELAY_MS = 2000;
let smtp: SMTPServer;
let server: TestServer;
const received: string[] = [];

beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, session, done) {
      stream.resume();
      stream.on('end', () => {
        setTimeout(() => {
          received.push(session.envelope.rcptTo[0]?.address ?? '');
          done();
        }, SMTP_DELAY_MS);
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  const { port } = smtp.server.address() as AddressInfo;
  server = await startServer({ SMTP_URL: `smtp://127.0.0.1:${port}` });
});
afterAll(async () => {
  await server.close();
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
});

async function timed(work: () => Promise<{ status: number }>): Promise<{ status: number; ms: number }> {
  const start = performance.now();
  const res = await work();
  return { status: res.status, ms: performance.now() - start };
}

describe('forms that mail only known accounts', () => {
  it('POST /resettable answers before the mail is sent, for a known id as for an unknown one', async () => {
    const user = await createActiveUser(server);
    const http = new Client(server.url);
    const known = await timed(() => http.post('/resettable', { id: user.email, token: 'dev-ok' }));
    const unknown = await timed(() => http.post('/resettable', { id: 'nobody-here@example.org', token: 'dev-ok' }));
    expect(known.status).toBe(200);
    expect(unknown.status).toBe(200);
    expect(known.ms).toBeLessThan(SMTP_DELAY_MS / 2);
    expect(unknown.ms).toBeLessThan(SMTP_DELAY_MS / 2);
    // The mail does go out, after the answer.
    await readOutbox(server.dataDir);
    expect(received).toContain(user.email);
    expect(received).not.toContain('nobody-here@example.org');
  });

  it('POST /activatable answers before the mail is sent, for a known id as for an unknown one', async () => {
    const email = 'waiting-activation@example.org';
    await server.service.services.signUp.createUser({ email, password: 'Patient-Kettle-7', fullname: 'Wai Ting', state: 'Inactive' });
    const http = new Client(server.url);
    const known = await timed(() => http.post('/activatable', { id: email }));
    const unknown = await timed(() => http.post('/activatable', { id: 'nobody-there@example.org' }));
    expect(known.status).toBe(200);
    expect(unknown.status).toBe(200);
    expect(known.ms).toBeLessThan(SMTP_DELAY_MS / 2);
    expect(unknown.ms).toBeLessThan(SMTP_DELAY_MS / 2);
    await readOutbox(server.dataDir);
    expect(received).toContain(email);
  });
});
