/**
 * `CompiledQuery` (`db/compiled.ts`): a builder query compiled once, sent as the same SQL with
 * each call's values. Runs on SQLite, and on PostgreSQL in the suite's PostgreSQL run.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompiledQuery } from '../../db/compiled.ts';
import { migrateToLatest, watchWrites, type Db } from '../../db/knex.ts';
import { dropTestDatabase, openTestDatabase, statementsSent } from '../helpers/database.ts';
import { tempDir } from '../helpers/server.ts';

let dir: string;
let db: Db;
beforeAll(async () => {
  dir = await tempDir();
  db = await openTestDatabase(dir);
  await migrateToLatest(db);
  await db('rate_limits').insert([
    { key: 'compiled:a', points: 1, expire: 10 },
    { key: 'compiled:b', points: 2, expire: null },
    { key: 'compiled:c', points: 3, expire: 30 },
  ]);
});
afterAll(async () => {
  await db.destroy();
  await dropTestDatabase(dir);
  await rm(dir, { recursive: true, force: true });
});

/** The statements `work` sends. */
const sent = (work: () => Promise<unknown>) => statementsSent(db, work);

describe('a query compiled once', () => {
  const byKeyAndPoints = new CompiledQuery(['key', 'least'], (q, param) =>
    q('rate_limits').where({ key: param.key }).andWhere('points', '>=', param.least).first('key', 'points'),
  );

  it('answers what the builder answers, with each call’s values, as the same SQL every time', async () => {
    const statements = await sent(async () => {
      expect(await byKeyAndPoints.rows(db, { key: 'compiled:b', least: 1 })).toEqual([await db('rate_limits').where({ key: 'compiled:b' }).first('key', 'points')]);
      expect(await byKeyAndPoints.rows(db, { key: 'compiled:c', least: 3 })).toEqual([{ key: 'compiled:c', points: 3 }]);
      expect(await byKeyAndPoints.rows(db, { key: 'compiled:c', least: 4 })).toEqual([]);
    });
    // The second is the builder's own, for comparison.
    const compiled = statements.filter((_, i) => i !== 1);
    expect(new Set(compiled.map((s) => s.sql)).size).toBe(1);
    // The builder's own value (`first`'s limit) stays in its place between the callers' values.
    expect(compiled.map((s) => s.bindings)).toEqual([
      ['compiled:b', 1, 1],
      ['compiled:c', 3, 1],
      ['compiled:c', 4, 1],
    ]);
  });

  it('sends a value that looks like SQL as a value', async () => {
    expect(await byKeyAndPoints.rows(db, { key: "compiled:a' or '1'='1", least: 0 })).toEqual([]);
  });

  it('runs in a transaction, and an update asked for what it changed answers those rows, seen by the write watch', async () => {
    const watch = watchWrites(db, ['rate_limits']);
    const bump = new CompiledQuery(['key', 'points'], (q, param) => q('rate_limits').where({ key: param.key }).whereNotNull('expire').update({ points: param.points }, ['key']));
    const before = watch.generation();
    await db.transaction(async (trx) => {
      expect(await bump.rows(trx, { key: 'compiled:a', points: 7 })).toEqual([{ key: 'compiled:a' }]);
      expect(watch.settled()).toBe(false);
    });
    expect(watch.generation()).toBeGreaterThan(before);
    expect(watch.settled()).toBe(true);
    // `expire` is null: nothing changes, no row comes back.
    expect(await bump.rows(db, { key: 'compiled:b', points: 9 })).toEqual([]);
    expect(await db('rate_limits').orderBy('key').pluck('points')).toEqual([7, 2, 3]);
  });

  it('refuses, when it compiles, a parameter folded into other text, a parameter with no place, and SQL with a `?` of its own', async () => {
    const folded = new CompiledQuery(['name'], (q, param) => q('rate_limits').where('key', 'like', `%${param.name}%`).select('key'));
    await expect(folded.rows(db, { name: 'a' })).rejects.toThrow(/folded into a value/);
    const unused = new CompiledQuery(['key', 'other'], (q, param) => q('rate_limits').where({ key: param.key }).select('key'));
    await expect(unused.rows(db, { key: 'compiled:a', other: 1 })).rejects.toThrow(/no place for other/);
    const literal = new CompiledQuery(['key'], (q, param) => q('rate_limits').where({ key: param.key }).whereRaw("key <> 'why?'").select('key'));
    await expect(literal.rows(db, { key: 'compiled:a' })).rejects.toThrow(/placeholders do not match/);
    // Nothing was sent for any of them.
    expect(await sent(() => Promise.allSettled([folded.rows(db, { name: 'a' }), unused.rows(db, { key: 'x', other: 1 })]))).toEqual([]);
  });
});
