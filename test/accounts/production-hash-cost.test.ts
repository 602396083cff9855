/**
 * The suite hashes passwords at a test cost (`PASSWORD_HASH_COST=test`, set by vitest.config.ts).
 * These prove that the cost is the suite's alone: `npm start`, as an operator runs it, stores
 * OWASP's parameters, and the configuration refuses the test cost outside the suite.
 */
import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OWASP_SCRYPT } from '../../server/accounts/passwords.ts';
import { loadConfig } from '../../server/config.ts';
import { openTestDatabase } from '../helpers/database.ts';
import { Client } from '../helpers/http.ts';
import { listening } from '../helpers/processes.ts';
import { childEnv, tempDir } from '../helpers/server.ts';
import { PASSWORD } from '../helpers/users.ts';

let dir: string | undefined;
const started: Array<ReturnType<typeof spawn>> = [];
afterAll(async () => {
  // Stopped, and waited for: a server still shutting down writes into the folder being removed (ENOTEMPTY).
  await Promise.all(
    started.map((child) => {
      if (child.exitCode !== null || child.signalCode !== null) return undefined;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      return exited;
    }),
  );
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the password-hash cost', () => {
  // `npm start` migrates a new database and then hashes at the real cost: a few seconds.
  it('npm start stores new passwords with OWASP scrypt parameters (N = 2^17, r = 8, p = 1)', { timeout: 60_000 }, async () => {
    dir = await tempDir();
    const { NODE_ENV: _node, PASSWORD_HASH_COST: _cost, ...env } = await childEnv({ DATA_DIR: dir, PORT: '0', LOG_LEVEL: 'warn' });
    const child = spawn('npm', ['start', '--silent'], { cwd: path.resolve(import.meta.dirname, '../..'), env, stdio: ['ignore', 'pipe', 'pipe'] });
    started.push(child);
    const { url } = await listening(child, 'npm start');

    const res = await new Client(url).post('/register', { email: 'cost@example.org', fullname: 'Ada Lovelace', password: PASSWORD, token: 'dev-ok' });
    expect(res.status).toBe(200);
    const db = await openTestDatabase(dir);
    try {
      const row = (await db('profiles').where({ id: res.body.id }).first('password_hash')) as { password_hash: string };
      const [scheme, n, r, p] = row.password_hash.split('$');
      expect({ scheme, N: Number(n), r: Number(r), p: Number(p) }).toEqual({ scheme: 'scrypt', ...OWASP_SCRYPT });
    } finally {
      await db.destroy();
    }
  });

  it('the test cost is refused outside the test suite (without NODE_ENV=test)', () => {
    expect(() => loadConfig({ PASSWORD_HASH_COST: 'test' })).toThrow(/PASSWORD_HASH_COST: PASSWORD_HASH_COST=test is for the test suite only/);
    expect(() => loadConfig({ PASSWORD_HASH_COST: 'test', NODE_ENV: 'production' })).toThrow(/PASSWORD_HASH_COST/);
    expect(loadConfig({}).passwordHashCost).toBe('owasp');
    expect(loadConfig({ PASSWORD_HASH_COST: 'test', NODE_ENV: 'test' }).passwordHashCost).toBe('test');
  });
});
