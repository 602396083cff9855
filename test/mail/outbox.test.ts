/**
 * Issue 28: mail that is never lost. Every mail is a row of the outbox, written with what it
 * announces, and one worker sends it: through an outage of the mail server, a crash with mail
 * waiting, and a crash between sending a mail and marking it sent, every mail arrives once.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TestClock } from '../helpers/clock.ts';
import { dropTestDatabase, openTestDatabase } from '../helpers/database.ts';
import { migrateToLatest } from '../../db/knex.ts';
import { Client } from '../helpers/http.ts';
import { readOutbox } from '../helpers/outbox.ts';
import { runningMark } from '../helpers/marks.ts';
import { machineTag } from '../../server/processes.ts';
import { freePort, killHard, startServerProcess, stopAll } from '../helpers/processes.ts';
import { startMailCatcher, type MailCatcher } from '../helpers/smtp.ts';
import { childEnv, startServer, tempDir, type TestServer } from '../helpers/server.ts';
import { waitUntil } from '../helpers/wait.ts';
import { CHECK_KEPT_MS } from '../../server/http/health.ts';
import { OutboxRepository } from '../../server/mail/outbox-repository.ts';

const PASSWORD = 'Kept-In-The-Outbox-1';
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function signUp(url: string, email: string, fullname = 'Olive Outbox'): Promise<void> {
  const res = await new Client(url).post('/register', { token: 'dev-ok', email, password: PASSWORD, fullname });
  expect(res.status).toBe(200);
}

async function catcher(port: number, options: Parameters<typeof startMailCatcher>[0] = {}): Promise<MailCatcher> {
  const smtp = await startMailCatcher({ port, ...options });
  cleanups.push(() => smtp.close());
  return smtp;
}

async function server(env: Record<string, string> = {}): Promise<TestServer> {
  const started = await startServer(env);
  cleanups.push(() => started.close());
  return started;
}

/** The mail files in the outbox folder now (`readOutbox` waits for this process's mail to be sent). */
async function written(dataDir: string): Promise<string[]> {
  return (await readdir(path.join(dataDir, 'outbox')).catch(() => [] as string[])).filter((name) => name.endsWith('.eml'));
}

/**
 * A sign-up's mail held back first (a file where the outbox folder goes: the folder cannot be
 * made, so the mail waits, its text kept), then written: the row as it was while it waited.
 */
async function writtenAfterAWait(email: string) {
  const service = await server();
  const mailer = service.service.services.mailer;
  const folder = path.join(service.dataDir, 'outbox');
  await writeFile(folder, '');
  await signUp(service.url, email);
  await mailer.settled();
  const waiting = (await service.service.db('mail_outbox').first()) as { id: number; state: string; body: string; attempts: number; last_error: string };
  await rm(folder);
  await mailer.retry('all');
  expect((await readOutbox(service.dataDir)).map((m) => m.to)).toEqual([email]);
  return { service, mailer, folder, waiting };
}

/** Every Message-ID appears once: no mail was sent twice. */
function expectEachOnce(smtp: MailCatcher, count: number): void {
  expect(smtp.mails).toHaveLength(count);
  expect(new Set(smtp.mails.map((m) => m.messageId)).size).toBe(count);
}

describe('the outbox', () => {
  it('keeps mail while the mail server is down, and sends each mail once when it is back', async () => {
    const port = await freePort();
    const service = await server({ SMTP_URL: `smtp://127.0.0.1:${port}` });
    await signUp(service.url, 'first@example.org');
    await signUp(service.url, 'second@example.org', 'Sam Second');
    // A reset for an id without an account writes a row like any other, which composes to nothing.
    expect((await new Client(service.url).post('/resettable', { id: 'nobody@example.org', token: 'dev-ok' })).status).toBe(200);
    await service.service.services.mailer.settled();
    // The reset for nobody is gone once composed, or waits uncomposed if the worker met the outage first.
    const backlog = await service.service.services.mailer.backlog();
    expect(backlog.failed).toBe(0);
    expect([2, 3]).toContain(backlog.pending);
    const rows = (await service.service.db('mail_outbox').orderBy('id')) as Array<{ state: string; attempts: number; body: string | null; recipient: string | null }>;
    // No mail server: every mail waits (one that was never tried not even composed: a link's
    // lifetime starts when it can be sent), and none is lost.
    expect(rows).toHaveLength(backlog.pending);
    expect(rows.every((r) => r.state === 'pending' || r.state === 'compose')).toBe(true);
    // The text holds the activation link and code: sealed at rest.
    for (const row of rows) if (row.body !== null) expect(row.body).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(rows.some((r) => r.body !== null)).toBe(true);

    const smtp = await catcher(port);
    await waitUntil(() => smtp.mails.length >= 2, 'both mails sent after the outage', 60_000);
    await service.service.services.mailer.settled();
    expectEachOnce(smtp, 2);
    expect(smtp.mails.map((m) => [m.to, m.subject])).toEqual([
      ['first@example.org', 'Signup confirmation'],
      ['second@example.org', 'Signup confirmation'],
    ]);
    const sent = (await service.service.db('mail_outbox').orderBy('id')) as Array<{ state: string; body: string | null }>;
    expect(sent.map((r) => [r.state, r.body])).toEqual([
      ['sent', null],
      ['sent', null],
    ]);
  });

  it('is reported by /health once mail has waited more than five minutes, without counts', async () => {
    const port = await freePort();
    const clock = new TestClock();
    const started = await startServer({ SMTP_URL: `smtp://127.0.0.1:${port}` }, undefined, { now: clock.now });
    cleanups.push(() => started.close());
    await signUp(started.url, 'late@example.org');
    await started.service.services.mailer.settled();
    // Each after the last one's answer is no longer shared (`CHECK_KEPT_MS`).
    const health = async () => {
      await new Promise((resolve) => setTimeout(resolve, CHECK_KEPT_MS + 50));
      return (await new Client(started.url).get('/health')).body;
    };
    expect(await health()).toEqual({ status: 'ok', database: 'ok' });
    clock.advance(2 * 60_000);
    expect(await health()).toEqual({ status: 'ok', database: 'ok' });
    clock.advance(4 * 60_000);
    const delayed = await health();
    expect(delayed).toEqual({ status: 'ok', database: 'ok', mail: { status: 'delayed', oldestPendingSeconds: expect.any(Number) } });
    expect((delayed as { mail: { oldestPendingSeconds: number } }).mail.oldestPendingSeconds).toBeGreaterThanOrEqual(360);
    // A day later the mail is given up on: nothing waits, and the failure is the operator's to see (`mail list`, the metrics).
    clock.advance(24 * 60 * 60_000);
    await started.service.services.mailer.settled();
    expect(await started.service.services.mailer.backlog()).toMatchObject({ pending: 0, failed: 1 });
    expect(await health()).toEqual({ status: 'ok', database: 'ok' });
  });

  it('sends the mail a killed process left waiting once it is started again', async () => {
    const port = await freePort();
    const dir = await tempDir();
    const env = await childEnv({ DATA_DIR: dir, SMTP_URL: `smtp://127.0.0.1:${port}` });
    const first = await startServerProcess(env);
    cleanups.push(() => stopAll());
    for (const name of ['one', 'two', 'three']) await signUp(first.url, `${name}@example.org`);
    const db = await openTestDatabase(dir);
    cleanups.push(() => db.destroy());
    // The worker has tried (and found no mail server) before the crash: the three mails wait.
    await waitUntil(async () => {
      const rows = (await db('mail_outbox').select('state', 'attempts')) as Array<{ state: string; attempts: number }>;
      return rows.length === 3 && rows.every((r) => r.state === 'pending' || r.state === 'compose') && rows.some((r) => r.attempts >= 1);
    }, 'three mails waiting, one tried', 30_000);
    await killHard(first.child);

    const smtp = await catcher(port);
    await startServerProcess(env);
    await waitUntil(() => smtp.mails.length >= 3, 'the three mails sent by the restarted process', 60_000);
    await waitUntil(async () => Number((await db('mail_outbox').where('state', 'sent').count({ n: '*' }))[0]?.n) === 3, 'the three rows marked sent');
    expectEachOnce(smtp, 3);
    expect(smtp.mails.map((m) => m.to).sort()).toEqual(['one@example.org', 'three@example.org', 'two@example.org']);
  }, 90_000);

  it("waits while a process of another pid space of this kernel holds the lease (its mark held), and takes it at once when that process stops (a restarted container)", async () => {
    const service = await server();
    // The lease of pid 1 of another container on this kernel, for a minute still.
    const host = 'the-previous-container';
    const space = `${readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()}/pid:[4026599999]`;
    const theirs = randomUUID();
    await service.service.db('leases').insert({ name: 'mail', holder: `${host} 1 ${space} ${theirs}`, held_until: Date.now() + 60_000 }).onConflict('name').merge();
    const running = await runningMark(service.dataDir, machineTag(host, space), 1, theirs);
    try {
      await signUp(service.url, 'waits@example.org');
      // Past the next look for mail due (every 2 s): the mail still waits.
      await service.service.services.mailer.settled(2_500);
      expect(await written(service.dataDir)).toEqual([]);
    } finally {
      await running.stop();
    }
    // The next look for mail due (every 2 s) finds its holder stopped: long before its lease runs out.
    await waitUntil(async () => (await written(service.dataDir)).length === 1, 'the mail sent once its holder stopped', 10_000);
    expect((await readOutbox(service.dataDir)).map((mail) => mail.to)).toEqual(['waits@example.org']);
  });

  it('finds the file of a mail it wrote before a crash between writing it and marking it sent, and writes it once', async () => {
    const { service, mailer, folder, waiting } = await writtenAfterAWait('once@example.org');
    expect(waiting).toMatchObject({ state: 'pending', attempts: 1, last_error: 'EEXIST' });
    // The row as a crash right after the file's rename would have left it: written, not marked.
    await service.service.db('mail_outbox').update({ state: 'pending', body: waiting.body, attempts: 2, next_attempt_at: 0 });
    await mailer.settled();
    expect(await readdir(folder)).toHaveLength(1);
    expect((await service.service.db('mail_outbox').first()) as { state: string }).toMatchObject({ state: 'sent', body: null });
  });

  it('writes again a mail whose file a power loss left empty, and leaves no file aside', async () => {
    const { service, mailer, folder, waiting } = await writtenAfterAWait('flushed@example.org');
    const [name] = await written(service.dataDir);
    const file = path.join(folder, name ?? '');
    const whole = readFileSync(file);
    // What a power loss can leave of a file renamed before its bytes reached the disk (as the
    // folder was written before they were flushed), with the row back as it was: the mail is not lost.
    await writeFile(file, '');
    await service.service.db('mail_outbox').where({ id: waiting.id }).update({ state: 'pending', body: waiting.body, attempts: 2, next_attempt_at: 0 });
    await mailer.settled();
    expect(readFileSync(file).length).toBe(whole.length);
    expect(readFileSync(file, 'utf8')).toContain('To: flushed@example.org');
    expect(await readdir(folder)).toEqual([name]);
    expect((await service.service.db('mail_outbox').first()) as { state: string }).toMatchObject({ state: 'sent', body: null });
  });

  it('stops after the mail it is sending when the service closes, not after the rest of its batch', async () => {
    const port = await freePort();
    const service = await server({ SMTP_URL: `smtp://127.0.0.1:${port}` });
    const mailer = service.service.services.mailer;
    for (const name of ['Ann', 'Bea', 'Cal']) await signUp(service.url, `${name.toLowerCase()}.closing@example.org`, `${name} Closing`);
    await mailer.settled();
    expect((await mailer.backlog()).pending).toBe(3);
    // The mail server takes the first recipient only once the service has begun to close.
    let release = () => undefined as void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const asked: string[] = [];
    const smtp = await catcher(port, { hold: (to) => (asked.push(to), asked.length === 1 ? held : Promise.resolve()) });
    // All due now, those not yet composed too.
    await service.service.db('mail_outbox').update({ next_attempt_at: 0 });
    await mailer.retry('all');
    await waitUntil(() => asked.length === 1, 'the first mail under way');
    const closing = mailer.close();
    release();
    await closing;
    // The mail under way went; the two after it wait for the next process.
    expectEachOnce(smtp, 1);
    expect(asked).toHaveLength(1);
    const rows = (await service.service.db('mail_outbox').orderBy('id')) as Array<{ state: string }>;
    expect(rows.filter((r) => r.state === 'sent')).toHaveLength(1);
    expect(rows.filter((r) => r.state === 'pending' || r.state === 'compose')).toHaveLength(2);
  });

  /** An outbox in a database of its own: no worker sends what is written there. */
  async function outboxAlone() {
    const dir = await tempDir();
    const db = await openTestDatabase(dir);
    cleanups.push(async () => {
      await db.destroy();
      await dropTestDatabase(dir);
      await rm(dir, { recursive: true, force: true });
    });
    await migrateToLatest(db);
    return { db, repo: new OutboxRepository(db) };
  }

  it('tries mail never composed again on retry, waiting or given up, and no mail that holds nothing to send', async () => {
    const { db, repo } = await outboxAlone();
    const table = () => db('mail_outbox');
    const later = Date.now() + 3_600_000;
    const row = (n: number, state: 'compose' | 'pending', what: { params?: Record<string, unknown>; body?: string }) =>
      repo.insert({ messageId: `<retry-${n}@example.org>`, kind: 'reset', state, ...what, ...(state === 'pending' ? { to: 'a@example.org', subject: 's' } : {}), now: 1, giveUpAt: later });
    await row(1, 'compose', { params: { email: 'a@example.org' } });
    await row(2, 'compose', { params: { email: 'b@example.org' } });
    await row(3, 'pending', { body: 'sealed text' });
    await row(4, 'pending', { body: 'sealed text' });
    // 1 waits, never composed; 2 was given up before it was composed; 3 was given up; 4 holds nothing to send (its text purged).
    await table().where({ message_id: '<retry-1@example.org>' }).update({ next_attempt_at: later });
    await table().where({ message_id: '<retry-2@example.org>' }).update({ state: 'failed' });
    await table().where({ message_id: '<retry-3@example.org>' }).update({ state: 'failed' });
    await table().where({ message_id: '<retry-4@example.org>' }).update({ state: 'failed', body: null });
    const now = Date.now();
    expect(await repo.retry('all', now, now + 1000)).toBe(3);
    const rows = (await table().orderBy('message_id')) as Array<{ state: string; next_attempt_at: number | string; attempts: number }>;
    expect(rows.map((r) => [r.state, Number(r.next_attempt_at) === now])).toEqual([
      ['compose', true],
      ['compose', true],
      ['pending', true],
      ['failed', false],
    ]);
  });

  it('leaves a mail whose attempt is under way to that attempt on retry: made due again, it could be sent twice', async () => {
    const { db, repo } = await outboxAlone();
    const later = Date.now() + 3_600_000;
    for (const n of [1, 2]) await repo.insert({ messageId: `<under-way-${n}@example.org>`, kind: 'reset', state: 'pending', body: 'sealed text', to: 'a@example.org', subject: 's', now: 1, giveUpAt: later });
    const [underWay, deferred] = (await db('mail_outbox').orderBy('message_id')) as Array<{ id: number; state: 'pending'; attempts: number }>;
    const claimedAt = Date.now();
    // The first is claimed by a worker and being sent; the second's attempt failed and waits.
    expect(await repo.claim({ ...underWay!, attempts: 0 } as never, claimedAt + 90_000)).toBe(true);
    expect(await repo.claim({ ...deferred!, attempts: 0 } as never, claimedAt + 90_000)).toBe(true);
    await repo.deferred(deferred!.id, 'ETIMEDOUT', claimedAt + 60_000);
    expect(await repo.retry('all', claimedAt, later)).toBe(1);
    const rows = (await db('mail_outbox').orderBy('message_id')) as Array<{ attempts: number; next_attempt_at: number | string }>;
    expect(rows.map((r) => [r.attempts, Number(r.next_attempt_at)])).toEqual([
      [1, claimedAt + 90_000],
      [0, claimedAt],
    ]);
  });

  it('gives up on a mail the server refuses for good, and tries one it refuses for now again', async () => {
    const port = await freePort();
    let tries = 0;
    const smtp = await catcher(port, {
      refuse: (to) => {
        if (to === 'gone@example.org') return 550;
        if (to === 'full@example.org' && tries++ === 0) return 451;
        return null;
      },
    });
    const service = await server({ SMTP_URL: `smtp://127.0.0.1:${port}` });
    const mailer = service.service.services.mailer;
    await signUp(service.url, 'gone@example.org');
    await signUp(service.url, 'full@example.org', 'Fay Full');
    await mailer.settled();
    const rows = (await service.service.db('mail_outbox').orderBy('id')) as Array<{ recipient: string; state: string; attempts: number; last_error: string }>;
    expect(rows.map((r) => [r.recipient, r.state, r.attempts])).toEqual([
      ['gone@example.org', 'failed', 1],
      ['full@example.org', 'pending', 1],
    ]);
    expect(rows[0]?.last_error).toMatch(/^EENVELOPE RCPT TO 550/);
    expect(rows[1]?.last_error).toMatch(/^EENVELOPE RCPT TO 451/);
    // The log says why too, as `mail list` does (`error` is the key of thrown errors, which
    // made a reason given as text "(not an Error)").
    const lines = service.logs.join('').split('\n').filter(Boolean).map((line) => JSON.parse(line) as { msg: string; reason?: string });
    expect(lines.find((line) => line.msg.startsWith('a mail was given up on'))?.reason).toMatch(/^EENVELOPE RCPT TO 550/);
    expect(lines.find((line) => line.msg.startsWith('a mail was not sent'))?.reason).toMatch(/^EENVELOPE RCPT TO 451/);
    expect(await mailer.backlog()).toMatchObject({ pending: 1, failed: 1 });
    // An operator's retry (`admin mail retry`) makes it due now rather than in a few seconds.
    expect(await mailer.retry('all')).toBe(2);
    await mailer.settled();
    expect(smtp.mails.map((m) => m.to)).toEqual(['full@example.org']);
    expect(await mailer.backlog()).toMatchObject({ pending: 0, failed: 1 });
  });
});
