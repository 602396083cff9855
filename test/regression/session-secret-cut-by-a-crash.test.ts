/**
 * A kill between creating `$DATA_DIR/session-secret` and writing it left an empty file, and the
 * next start signed every session with the empty string as its key. The generated secret now
 * lives in the database, written whole in one statement; an empty or cut file left by an older
 * version is not adopted.
 */
import { readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { migrateToLatest, type Db } from '../../db/knex.ts';
import { loadSessionSecret } from '../../server/accounts/session-tokens.ts';
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

async function freshDatabase(): Promise<{ dir: string; db: Db }> {
  const dir = await tempDir();
  dirs.push(dir);
  const db = await openTestDatabase(dir);
  dbs.push(db);
  await migrateToLatest(db);
  return { dir, db };
}

describe('the generated session secret', () => {
  it('an empty file left by a crash is not adopted: a whole secret is generated into the database', async () => {
    const { dir, db } = await freshDatabase();
    await writeFile(path.join(dir, 'session-secret'), '');
    const secret = await loadSessionSecret(undefined, db, dir);
    expect(secret.length).toBeGreaterThanOrEqual(32);
    expect(await db('install_secrets').select('name', 'value')).toEqual([{ name: 'session', value: secret }]);
    expect(await readdir(dir)).not.toContain('session-secret');
  });

  it('a cut secret left in the file is not adopted either', async () => {
    const { dir, db } = await freshDatabase();
    await writeFile(path.join(dir, 'session-secret'), 'abc123\n');
    const secret = await loadSessionSecret(undefined, db, dir);
    expect(secret).not.toContain('abc123');
    expect(secret.length).toBeGreaterThanOrEqual(32);
  });

  it('processes starting together all get the one secret, and leave no file in the data folder', async () => {
    const { dir } = await freshDatabase();
    // One connection (SQLite) or pool (PostgreSQL) per process.
    const opened = await Promise.all(Array.from({ length: 4 }, () => openTestDatabase(dir)));
    dbs.push(...opened);
    const secrets = await Promise.all(opened.flatMap((db) => [loadSessionSecret(undefined, db, dir), loadSessionSecret(undefined, db, dir)]));
    expect(new Set(secrets).size).toBe(1);
    expect((await readdir(dir)).filter((name) => name.startsWith('session-secret'))).toEqual([]);
  });
});
