/**
 * Issue 15: the generated session secret was kept in a file in `$DATA_DIR`, so with several
 * processes on different machines sharing one PostgreSQL database, each machine generated its
 * own and a token signed by one process was a 401 on another. The secret is now kept in the
 * database; an existing install's file is adopted into it, so sessions already issued stay valid.
 * (A data folder of its own per process stands for a machine of its own.)
 */
import { readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { migrateToLatest, type Db } from '../../db/knex.ts';
import { loadSessionSecret, SessionTokens, tokenUser } from '../../server/accounts/session-tokens.ts';
import { dropTestDatabase, openTestDatabase } from '../helpers/database.ts';
import { tempDir } from '../helpers/server.ts';

const dirs: string[] = [];
const dbs: Db[] = [];
afterEach(async () => {
  await Promise.all(dbs.splice(0).map((db) => db.destroy()));
  await Promise.all(dirs.splice(0).map(async (dir) => {
    await rm(dir, { recursive: true, force: true });
    await dropTestDatabase(dir);
  }));
});

async function folder(): Promise<string> {
  const dir = await tempDir();
  dirs.push(dir);
  return dir;
}

async function database(dir: string): Promise<Db> {
  const db = await openTestDatabase(dir);
  dbs.push(db);
  await migrateToLatest(db);
  return db;
}

const OLD_SECRET = 'an-older-install-s-secret-of-48-characters-abcdefgh';
const claims = { sub: '~Ada_Lovelace1', sid: 'session-1', ver: 0, user: tokenUser('ada@example.org', '~Ada_Lovelace1') };

describe('the generated session secret, with processes on several machines', () => {
  it('a token signed by a process on one machine is accepted by a process on another', async () => {
    const first = await folder();
    const db = await database(first);
    const other = await folder();
    // The other machine's process has its own connections to the one database.
    const elsewhere = await openTestDatabase(first);
    dbs.push(elsewhere);
    const [a, b] = await Promise.all([loadSessionSecret(undefined, db, first), loadSessionSecret(undefined, elsewhere, other)]);
    expect(b).toBe(a);
    const token = await new SessionTokens(a, 'https://accounts.example.org').sign(claims, 60);
    await expect(new SessionTokens(b, 'https://accounts.example.org').verify(token)).resolves.toMatchObject({ sub: claims.sub, sid: claims.sid });
    expect(await readdir(first)).not.toContain('session-secret');
    expect(await readdir(other)).not.toContain('session-secret');
  });

  it("an existing install's secret file is adopted into the database and removed, so its sessions stay valid", async () => {
    const dir = await folder();
    const db = await database(dir);
    await writeFile(path.join(dir, 'session-secret'), `${OLD_SECRET}\n`, { mode: 0o600 });
    const issuedBefore = await new SessionTokens(OLD_SECRET, 'https://accounts.example.org').sign(claims, 60);

    expect(await loadSessionSecret(undefined, db, dir)).toBe(OLD_SECRET);
    expect(await readdir(dir)).not.toContain('session-secret');
    // Read back from the database on the next start, and on every other machine.
    expect(await loadSessionSecret(undefined, db, await folder())).toBe(OLD_SECRET);
    await expect(new SessionTokens(await loadSessionSecret(undefined, db, dir), 'https://accounts.example.org').verify(issuedBefore)).resolves.toMatchObject({ sub: claims.sub });
  });

  it('a secret file on a second machine does not replace the one the database holds', async () => {
    const first = await folder();
    const db = await database(first);
    const held = await loadSessionSecret(undefined, db, first);
    const second = await folder();
    await writeFile(path.join(second, 'session-secret'), `${OLD_SECRET}\n`);
    expect(await loadSessionSecret(undefined, db, second)).toBe(held);
  });

  it('SESSION_SECRET, when set, is used and nothing is stored', async () => {
    const dir = await folder();
    const db = await database(dir);
    expect(await loadSessionSecret(OLD_SECRET, db, dir)).toBe(OLD_SECRET);
    expect(await db('install_secrets').select('name')).toEqual([]);
  });
});
