/**
 * Issue 15: servers started at the same moment on an empty database (an install's first start
 * with several processes, on SQLite's one file or on PostgreSQL) must all come up, and agree:
 * one signing key, one session secret (a token from one is good on another), migrations run
 * once. Three real `npm start` processes here, started together.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { migrations } from '../../db/migrations/index.ts';
import { dropTestDatabase, openTestDatabase } from '../helpers/database.ts';
import { Client } from '../helpers/http.ts';
import { childEnv, tempDir } from '../helpers/server.ts';

/** Starts several server processes at once on a new database. */
const LONG = { timeout: 120_000 };

const SERVERS = 3;
const run = promisify(execFile);

let dir: string | undefined;
const children: ChildProcess[] = [];
afterEach(async () => {
  await Promise.all(
    children.splice(0).map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.on('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }),
  );
  if (dir) {
    await rm(dir, { recursive: true, force: true });
    await dropTestDatabase(dir);
  }
});

/** Starts `npm start`'s script and resolves with its address once it listens; rejects if it exits first. */
function startChild(env: NodeJS.ProcessEnv): Promise<string> {
  const child = spawn(process.execPath, ['server/main.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /Listening on (http:\/\/\S+)/.exec(out);
      if (match?.[1]) resolve(match[1]);
    });
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('exit', (code) => reject(new Error(`a server exited (${code}) before listening:\n${out}${err}`)));
  });
}

describe('servers started together on a new database', () => {
  it('all start, with one signing key, one session secret and the migrations run once', LONG, async () => {
    dir = await tempDir();
    const env = await childEnv({ DATA_DIR: dir, PORT: '0', LOG_LEVEL: 'warn' });
    const urls = await Promise.all(Array.from({ length: SERVERS }, () => startChild(env)));

    // One signing key, published by every server.
    const jwks = await Promise.all(urls.map(async (url) => (await new Client(url).get('/oidc/jwks')).body as { keys: Array<{ kid: string }> }));
    const kids = jwks.map((set) => set.keys.map((key) => key.kid));
    expect(kids[0]).toHaveLength(1);
    expect(kids).toEqual(Array.from({ length: SERVERS }, () => kids[0]));

    // One session secret: a token issued by each server is accepted by every other.
    await run(process.execPath, ['server/cli/admin.ts', 'user', 'add', '--email', 'ada@example.org', '--password', 'Analytical-Engine1', '--fullname', 'Ada Lovelace'], { env });
    for (const [i, issuer] of urls.entries()) {
      const login = await new Client(issuer).post('/login', { id: 'ada@example.org', password: 'Analytical-Engine1' });
      expect(login.status).toBe(200);
      const other = new Client(urls[(i + 1) % SERVERS]!);
      other.bearer = login.body.token;
      const me = await other.get('/profiles');
      expect(me.status).toBe(200);
      expect(me.body.profiles.map((p: { id: string }) => p.id)).toEqual(['~Ada_Lovelace1']);
    }

    const db = await openTestDatabase(dir);
    try {
      expect(await db('knex_migrations').orderBy('id').pluck('name')).toEqual(migrations.map((m) => m.name));
      expect(await db('oidc_keys').pluck('kid')).toEqual(kids[0]);
      expect(await db('install_secrets').pluck('name')).toEqual(['session']);
    } finally {
      await db.destroy();
    }
  });
});
