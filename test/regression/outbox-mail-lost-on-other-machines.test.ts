/**
 * Issue 15: without `SMTP_URL`, mail is written to `$DATA_DIR/outbox`, a folder of one machine.
 * With several processes sharing a PostgreSQL database, possibly on several machines, a mail
 * written by a process on one machine was in an outbox nobody reads. On PostgreSQL the service
 * now asks for `SMTP_URL`, or for `MAIL_OUTBOX=on` (the operator says the outbox is meant: one
 * machine, or tests), and then warns at start. SQLite (one machine) is unchanged.
 */
import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../db/knex.ts';
import { loadConfig } from '../../server/config.ts';
import { createLogger } from '../../server/logger.ts';
import { createMailer } from '../../server/mail/outbox.ts';
import { dropTestDatabase, TEST_POSTGRES_URL } from '../helpers/database.ts';
import { childEnv, startServer, tempDir } from '../helpers/server.ts';

const SHARED = { DATABASE_URL: 'postgres://accounts@db.example.org/accounts' };

describe('mail when several processes share the database', () => {
  it('a start on PostgreSQL with neither SMTP_URL nor MAIL_OUTBOX=on is refused, naming SMTP_URL', () => {
    expect(() => loadConfig(SHARED)).toThrow(/SMTP_URL: SMTP_URL is required with DATABASE_URL.*MAIL_OUTBOX=on/s);
  });

  it('SMTP_URL is enough; MAIL_OUTBOX=on keeps the outbox of each machine; on SQLite the outbox needs neither', () => {
    expect(loadConfig({ ...SHARED, SMTP_URL: 'smtp://mail.example.org' })).toMatchObject({ smtpUrl: 'smtp://mail.example.org', outboxOnly: false });
    expect(loadConfig({ ...SHARED, MAIL_OUTBOX: 'on' })).toMatchObject({ smtpUrl: undefined, outboxOnly: true });
    expect(loadConfig({})).toMatchObject({ smtpUrl: undefined, outboxOnly: false });
  });

  it('MAIL_OUTBOX takes only on', () => {
    expect(() => loadConfig({ ...SHARED, MAIL_OUTBOX: 'yes' })).toThrow(/MAIL_OUTBOX: MAIL_OUTBOX may only be set to on/);
  });

  it('npm start refuses to start, and says why', async () => {
    const dir = await tempDir();
    // The test helpers' acknowledgement (and any SMTP_URL of the run's environment) left out.
    const { MAIL_OUTBOX: _acknowledged, SMTP_URL: _smtp, ...env } = await childEnv({ DATA_DIR: dir, PORT: '0' });
    const child = spawn(process.execPath, ['server/main.ts'], { env: { ...env, ...SHARED }, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).not.toBe(0);
    expect(err).toContain('SMTP_URL is required with DATABASE_URL');
    await rm(dir, { recursive: true, force: true });
    await dropTestDatabase(dir);
  });

  it('the outbox on a shared database is said in a warning at start', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    const config = loadConfig({ DATA_DIR: '/nonexistent', ...SHARED, MAIL_OUTBOX: 'on' });
    // The outbox's database is never touched here: the warning is said when the mailer is made.
    const db = openDatabase({ dataDir: '/nonexistent' });
    const mailer = createMailer({ db, config, secret: 'x'.repeat(32), logger: createLogger('info', sink), now: Date.now });
    await mailer.close();
    await db.destroy();
    const warnings = lines.map((line) => JSON.parse(line) as { level: number; msg: string }).filter((line) => line.level === 40);
    expect(warnings.map((w) => w.msg)).toEqual([expect.stringContaining("mail is written to this machine's outbox although the database is shared")]);
  });

  it.runIf(TEST_POSTGRES_URL)('a test server on PostgreSQL writes to the outbox, with the warning', async () => {
    const server = await startServer();
    try {
      expect(server.config.outboxOnly).toBe(true);
      expect(server.logs.some((line) => line.includes('MAIL_OUTBOX=on'))).toBe(true);
    } finally {
      await server.close();
    }
  });
});
