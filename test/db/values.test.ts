/**
 * The same values from both databases: repositories read counts and millisecond timestamps as
 * numbers, and text of any length the schemas let through, whichever database runs (this file
 * runs on SQLite, and on PostgreSQL in the suite's PostgreSQL run).
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, type Db } from '../../db/knex.ts';
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

describe('values read back from the database', () => {
  it('counts and bigint milliseconds are numbers', async () => {
    const at = Date.UTC(2027, 5, 1, 12, 0, 0, 123);
    await db('rate_limits').insert({ key: 'values:test', points: 3, expire: at });
    const row = await db('rate_limits').where({ key: 'values:test' }).first('points', 'expire');
    expect(row).toEqual({ points: 3, expire: at });
    expect(await db('rate_limits').where({ key: 'values:test' }).count({ n: '*' })).toEqual([{ n: 1 }]);
    expect(await db('rate_limits').where({ key: 'values:test' }).sum({ total: 'expire' })).toEqual([{ total: at }]);
  });

  it('text columns hold more than 255 characters', async () => {
    const key = `values:${'k'.repeat(600)}`;
    await db('rate_limits').insert({ key, points: 1, expire: null });
    expect(await db('rate_limits').where({ key }).first('key')).toEqual({ key });
  });
});
