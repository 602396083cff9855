/**
 * `watchWrites`: what a process-local cache asks before it keeps or uses an answer (UserInfo's
 * kept answers, issue 16). Runs on SQLite, and on PostgreSQL in the suite's PostgreSQL run,
 * where a read on another connection can see the state before an open transaction's write.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, watchWrites, writtenTextsKept, type Db } from '../../db/knex.ts';
import { isPostgres } from '../../db/postgres.ts';
import { dropTestDatabase, openTestDatabase } from '../helpers/database.ts';
import { tempDir } from '../helpers/server.ts';

let dir: string;
let db: Db;
beforeAll(async () => {
  dir = await tempDir();
  db = await openTestDatabase(dir);
  await migrateToLatest(db);
});
afterAll(async () => {
  await db.destroy();
  await dropTestDatabase(dir);
  await rm(dir, { recursive: true, force: true });
});

describe('watchWrites', () => {
  it('moves on for a write to a watched table, in or out of a transaction, and is unsettled until its transaction ends', async () => {
    const watch = watchWrites(db, ['rate_limits']);
    expect(watchWrites(db, ['rate_limits'])).toBe(watch);
    const start = watch.generation();
    await db('rate_limits').select('key');
    await db('install_secrets').select('name');
    expect(watch.generation()).toBe(start);

    await db('rate_limits').insert({ key: 'watch:one', points: 1, expire: null });
    const afterInsert = watch.generation();
    expect(afterInsert).toBeGreaterThan(start);
    expect(watch.settled()).toBe(true);

    let inside: { generation: number; settled: boolean } | undefined;
    await db.transaction(async (trx) => {
      await trx('rate_limits').where({ key: 'watch:one' }).update({ points: 2 });
      inside = { generation: watch.generation(), settled: watch.settled() };
    });
    expect(inside?.generation).toBeGreaterThan(afterInsert);
    expect(inside?.settled).toBe(false);
    // Ended (committed, its connection back in the pool): settled, and moved on once more.
    expect(watch.settled()).toBe(true);
    expect(watch.generation()).toBeGreaterThan(inside?.generation ?? 0);

    await expect(
      db.transaction(async (trx) => {
        await trx.raw('delete from rate_limits where key = ?', ['watch:one']);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(watch.settled()).toBe(true);
  });

  it('does not move for writes to other tables', async () => {
    const watch = watchWrites(db, ['oidc_tokens']);
    const start = watch.generation();
    await db('rate_limits').insert({ key: 'watch:two', points: 1, expire: null });
    await db('rate_limits').where({ key: 'watch:two' }).delete();
    expect(watch.generation()).toBe(start);
    expect(watch.settled()).toBe(true);
  });

  it('ignores plain inserts into the tables asked, but not their updates, deletes or upserts', async () => {
    const watch = watchWrites(db, ['rate_limits', 'install_secrets'], { insertsIgnored: ['rate_limits'] });
    const start = watch.generation();
    await db('rate_limits').insert({ key: 'watch:three', points: 1, expire: null });
    await db.raw('insert into rate_limits (key, points, expire) values (?, ?, null)', ['watch:four', 1]);
    expect(watch.generation()).toBe(start);
    await db('rate_limits').insert({ key: 'watch:three', points: 5, expire: null }).onConflict('key').merge({ points: 5 });
    const afterUpsert = watch.generation();
    expect(afterUpsert).toBeGreaterThan(start);
    await db('rate_limits').where({ key: 'watch:four' }).update({ points: 2 });
    expect(watch.generation()).toBeGreaterThan(afterUpsert);
    const beforeDelete = watch.generation();
    await db('rate_limits').whereIn('key', ['watch:three', 'watch:four']).delete();
    expect(watch.generation()).toBeGreaterThan(beforeDelete);
    // An insert into a watched table whose inserts count.
    const beforeSecret = watch.generation();
    await db('install_secrets').insert({ name: 'watch-test', value: 'x', created_at: 0 });
    expect(watch.generation()).toBeGreaterThan(beforeSecret);
    await db('install_secrets').where({ name: 'watch-test' }).delete();
  });

  it('counts a plain insert, update or delete as a write to its own table alone, and anything else to every table it names', async () => {
    const watch = watchWrites(db, ['install_secrets']);
    const moves = async (sql: string, bindings: string[] = []) => {
      const before = watch.generation();
      await db.raw(sql, bindings);
      return watch.generation() > before;
    };
    // Reads of the watched table inside writes to others: the sign-in's token, stored only under a consent.
    expect(await moves('insert into rate_limits (key, points, expire) select name, 1, null from install_secrets where name = ?', ['nothing'])).toBe(false);
    expect(await moves('update rate_limits set points = 2 where key in (select name from install_secrets)')).toBe(false);
    expect(await moves('delete from rate_limits where key in (select name from install_secrets where name = ?)', ['nothing'])).toBe(false);
    // Writes to it, however spelled.
    expect(await moves('insert into "install_secrets" (name, value, created_at) select ?, ?, 0 where 1 = 1', ['watch-five', 'x'])).toBe(true);
    expect(await moves('update install_secrets set value = ? where name = ?', ['y', 'watch-five'])).toBe(true);
    expect(await moves('  DELETE  FROM  install_secrets where name = ?', ['watch-five'])).toBe(true);
    // Anything else that names it, as before: a statement with a WITH may write whatever it names.
    expect(await moves('with gone as (select name from install_secrets where name = ?) delete from rate_limits where key in (select name from gone)', ['nothing'])).toBe(true);
  });

  it('ignores plain inserts into an ignored table only: its upserts and replacements count', async () => {
    const watch = watchWrites(db, ['rate_limits'], { insertsIgnored: ['rate_limits'] });
    const moves = async (sql: string, bindings: string[] = []) => {
      const before = watch.generation();
      await db.raw(sql, bindings);
      return watch.generation() > before;
    };
    expect(await moves('insert into rate_limits (key, points, expire) values (?, 1, null)', ['watch:six'])).toBe(false);
    expect(await moves('insert into rate_limits (key, points, expire) values (?, 2, null) on conflict (key) do update set points = 2', ['watch:six'])).toBe(true);
    if (!isPostgres(db)) {
      expect(await moves('insert or replace into rate_limits (key, points, expire) values (?, 3, null)', ['watch:six'])).toBe(true);
    }
    expect(await moves('delete from rate_limits where key = ?', ['watch:six'])).toBe(true);
  });

  it('reads a statement the same for every watch, made before or after it was first sent, however many texts came between, and however long', async () => {
    const secrets = watchWrites(db, ['install_secrets']);
    const limits = watchWrites(db, ['rate_limits']);
    const moved = async (sql: string, bindings: string[]) => {
      const before = [secrets.generation(), limits.generation()];
      await db.raw(sql, bindings);
      return [secrets.generation() > before[0]!, limits.generation() > before[1]!];
    };
    const insert = 'insert into install_secrets (name, value, created_at) values (?, ?, 0)';
    expect(await moved(insert, ['watch-seven', 'x'])).toEqual([true, false]);
    // A watch made after the text was first read, ignoring plain inserts into it.
    const later = watchWrites(db, ['install_secrets', 'rate_limits'], { insertsIgnored: ['install_secrets'] });
    const laterBefore = later.generation();
    expect(await moved(insert, ['watch-eight', 'x'])).toEqual([true, false]);
    expect(later.generation()).toBe(laterBefore);
    // Many other texts between.
    for (let i = 0; i < 300; i += 1) await db.raw(`delete from rate_limits where key = ? -- text ${i}`, [`watch:none:${i}`]);
    expect(writtenTextsKept()).toBeLessThanOrEqual(200);
    const update = 'update install_secrets set value = ? where name = ?';
    expect(await moved(update, ['y', 'watch-seven'])).toEqual([true, false]);
    expect(later.generation()).toBeGreaterThan(laterBefore);
    // A text too long to be kept is read every time, the same way.
    const long = `delete from install_secrets where name = ? /* ${'x'.repeat(9000)} */`;
    expect(await moved(long, ['watch-seven'])).toEqual([true, false]);
    expect(await moved(long, ['watch-eight'])).toEqual([true, false]);
  });
});
