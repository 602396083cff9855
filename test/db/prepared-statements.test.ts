import { rm } from 'node:fs/promises';
import path from 'node:path';
import sqlite3 from 'sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase, type Db } from '../../db/knex.ts';
import { tempDir } from '../helpers/server.ts';

let dir: string;
let db: Db;

beforeEach(async () => {
  dir = await tempDir();
  db = openDatabase({ dataDir: dir });
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

  it('are reset after meeting a lock, so the connection is not left holding a stale snapshot', async () => {
    const other = await otherConnection();
    await other.exec("insert into settings (key, value) values ('x', '0')");
    // A write that meets another connection's newer commit inside a transaction that has read
    // fails at once (SQLite cannot wait there): the statement is paused, not finished.
    await db.raw('BEGIN');
    await db('settings').where({ key: 'x' }).first();
    await other.exec("update settings set value = '1' where key = 'x'");
    await expect(db('settings').insert({ key: 'y', value: '"v"' })).rejects.toThrow(/SQLITE_BUSY/);
    await db.raw('ROLLBACK');
    // Other connections go on writing; this one must be able to write again.
    await other.exec("update settings set value = '2' where key = 'x'");
    await db('settings').where({ key: 'x' }).update({ value: '3' });
    await other.exec("update settings set value = '4' where key = 'x'");
    await db('settings').insert({ key: 'y', value: '"v"' });
    expect(await db('settings').orderBy('key').pluck('value')).toEqual(['4', '"v"']);
    await other.close();
    await db.destroy();
  });

  it('a transaction holds the write lock from its start, so it never meets a lock half-way', async () => {
    const other = await otherConnection();
    await db.transaction(async (trx) => {
      await trx('settings').select();
      // Another connection cannot write in between (with no wait allowed, it is refused)...
      await expect(other.exec("insert into settings (key, value) values ('o', '0')")).rejects.toThrow(/SQLITE_BUSY/);
      // ...so this transaction's own write, after its read, goes through.
      await trx('settings').insert({ key: 't', value: '"v"' });
    });
    await other.exec("insert into settings (key, value) values ('o', '0')");
    expect(await db('settings').orderBy('key').pluck('key')).toEqual(['o', 't']);
    await other.close();
    await db.destroy();
  });

  it('a COMMIT that fails leaves no transaction open on the connection', async () => {
    // With foreign keys checked at COMMIT, a violation fails the COMMIT itself, which SQLite
    // leaves open; Knex only reports the failure.
    const broken = db.transaction(async (trx) => {
      await trx.raw('PRAGMA defer_foreign_keys = ON');
      await trx('group_members').insert({ group_id: 'no-such-group', member: 'x' });
    });
    await expect(broken).rejects.toThrow(/FOREIGN KEY/);
    await db.transaction(async (trx) => {
      await trx('settings').insert({ key: 'after', value: '"v"' });
    });
    expect(await db('settings').pluck('key')).toEqual(['after']);
    expect(await db('group_members').count({ n: '*' })).toEqual([{ n: 0 }]);
    await db.destroy();
  });

  it('are let go of when the database closes, so it does close', async () => {
    for (let i = 0; i < 300; i += 1) await db.raw(`select ${i} as n`);
    await expect(db.destroy()).resolves.toBeUndefined();
  });
});

/** A second connection to the same file (another process, say), that never waits for a lock. */
async function otherConnection() {
  const conn = new sqlite3.Database(path.join(dir, 'service.sqlite'));
  conn.configure('busyTimeout', 0);
  return {
    exec: (sql: string) => new Promise<void>((resolve, reject) => conn.exec(sql, (err) => (err ? reject(err) : resolve()))),
    close: () => new Promise<void>((resolve) => conn.close(() => resolve())),
  };
}
