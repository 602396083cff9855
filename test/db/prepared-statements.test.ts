import { rm } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase, type Db } from '../../db/knex.ts';
import { tempDir } from '../helpers/server.ts';

let dir: string;
let db: Db;

beforeEach(async () => {
  dir = await tempDir();
  db = openDatabase(dir);
  await migrateToLatest(db);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the prepared statements each connection keeps', () => {
  it('run again after a failed write, and a statement that cannot be prepared fails every time instead of hanging', async () => {
    const insert = (key: string) => db('settings').insert({ key, value: '"v"' });
    await insert('a');
    await expect(insert('a')).rejects.toThrow(/UNIQUE/);
    await insert('b');
    expect(await db('settings').orderBy('key').pluck('key')).toEqual(['a', 'b']);
    await expect(db.raw('select * from no_such_table')).rejects.toThrow(/no such table/);
    await expect(db.raw('select * from no_such_table')).rejects.toThrow(/no such table/);
    expect(await db('settings').where({ key: 'b' }).update({ value: '"w"' })).toBe(1);
    expect(await db('settings').where({ key: 'a' }).del()).toBe(1);
    await db.destroy();
  });

  it('are let go of when the database closes, so it does close', async () => {
    for (let i = 0; i < 300; i += 1) await db.raw(`select ${i} as n`);
    await expect(db.destroy()).resolves.toBeUndefined();
  });
});
