/**
 * SQLite's write-ahead log copied into the database file by `BackgroundCheckpoints`, from a
 * connection of its own, instead of inside the commit that takes the log past 1,000 pages: a log
 * under 1,000 uncopied pages is left alone (each complete checkpoint makes the next write start
 * the log again and sync its header, so checkpoints stay as rare as SQLite's own), one past it is
 * copied after the service's writes or a transaction's commit, two connections' checkpointers on
 * one file take turns, a failed checkpoint is tried again after a pause (not at every write), the
 * log's file a burst grew is cut back once copied, a connection the pool opens in place of a
 * disposed one checkpoints at the backstop too, and the service's connection checkpoints as
 * SQLite does by itself whenever none runs.
 */
import { createRequire } from 'node:module';
import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type sqlite3 from 'sqlite3';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { checkpointInBackground, openDatabase, type Db } from '../../db/knex.ts';
import { BackgroundCheckpoints, CHECKPOINT_BACKSTOP_PAGES, sqliteFile, WAL_SIZE_LIMIT } from '../../db/sqlite.ts';
import { tempDir } from '../helpers/server.ts';
import { waitUntil } from '../helpers/wait.ts';

let dir: string;
const opened: Db[] = [];
const started: BackgroundCheckpoints[] = [];
const warnings: unknown[] = [];
const notices: string[] = [];
const log = { warn: (details: object) => warnings.push(details), info: (_details: object, message: string) => notices.push(message) };

beforeEach(async () => {
  dir = await tempDir();
  warnings.length = 0;
  notices.length = 0;
});
afterEach(async () => {
  await Promise.all(started.splice(0).map((checkpoints) => checkpoints.close()));
  await Promise.all(opened.splice(0).map((db) => db.destroy()));
  await rm(dir, { recursive: true, force: true });
});

async function serviceDatabase(): Promise<Db> {
  const db = openDatabase({ dataDir: dir });
  opened.push(db);
  if (!(await db.schema.hasTable('filler'))) {
    await db.schema.createTable('filler', (t) => {
      t.integer('id').primary();
      t.binary('body');
    });
  }
  return db;
}

async function checkpointer(db: Db, options?: { retryAfterMs: number }): Promise<BackgroundCheckpoints> {
  const checkpoints = await checkpointInBackground(db, { dataDir: dir }, log, options);
  if (!checkpoints) throw new Error('no checkpointer');
  started.push(checkpoints);
  return checkpoints;
}

/** `count` rows of 4,000 bytes, a page each, one commit per row as requests write. */
async function writeRows(db: Db, from: number, count: number): Promise<void> {
  for (let i = from; i < from + count; i += 1) await db('filler').insert({ id: i, body: Buffer.alloc(4000, i % 251) });
}

const fileBytes = async () => (await stat(sqliteFile(dir))).size;
const autocheckpoint = async (db: Db) => ((await db.raw('PRAGMA wal_autocheckpoint')) as Array<{ wal_autocheckpoint: number }>)[0]?.wal_autocheckpoint;

it('leaves a log under 1,000 uncopied pages alone, and copies one past it from its own connection', async () => {
  const db = await serviceDatabase();
  expect(await autocheckpoint(db)).toBe(1000);
  const checkpoints = await checkpointer(db);
  // While it runs, the service's connection checkpoints only at the backstop.
  expect(await autocheckpoint(db)).toBe(CHECKPOINT_BACKSTOP_PAGES);
  const before = await fileBytes();

  await writeRows(db, 0, 200);
  const looked = checkpoints.stats.looksUnder;
  await waitUntil(() => checkpoints.stats.looksUnder > looked, 'looked at after the writes');
  expect(checkpoints.stats.checkpoints).toBe(0);
  expect(await fileBytes()).toBe(before);

  await writeRows(db, 200, 1100);
  await waitUntil(() => checkpoints.stats.checkpoints > 0, 'checkpointed');
  // The log as the checkpoint found it, in the database file: all of it, or nearly when the writes
  // were still going on (a PASSIVE checkpoint copies no frame past what a reader of the service's
  // connection may still need; on a loaded machine 3 of 3,226 were left once).
  expect(checkpoints.stats.last.log).toBeGreaterThanOrEqual(1000);
  expect(checkpoints.stats.last.checkpointed).toBeGreaterThan(checkpoints.stats.last.log - 50);
  // Each commit logs its row's page and rewrites the pages above it: 1,000 logged pages hold a few hundred rows.
  expect(await fileBytes()).toBeGreaterThan(before + 1_000_000);
  expect(warnings).toEqual([]);

  const listening = db.listenerCount('query');
  await checkpoints.close();
  await checkpoints.close();
  // Closed: it no longer follows the service's writes, and SQLite checkpoints by itself again.
  expect(db.listenerCount('query')).toBe(listening - 1);
  expect(await autocheckpoint(db)).toBe(1000);
});

/** Marks the pool's connection as the driver's error handling does (`dispose`): the pool replaces it at the next statement. */
async function disposeConnection(db: Db): Promise<sqlite3.Database> {
  const client = db.client as { acquireConnection(): Promise<sqlite3.Database>; releaseConnection(connection: sqlite3.Database): Promise<void> };
  const connection = await client.acquireConnection();
  (connection as sqlite3.Database & { __knex__disposed?: unknown }).__knex__disposed = new Error('disposed by the test');
  await client.releaseConnection(connection);
  return connection;
}

it('gives a connection the pool opens anew the backstop while it runs, and SQLite\'s threshold once closed', async () => {
  const db = await serviceDatabase();
  const checkpoints = await checkpointer(db);
  const first = await disposeConnection(db);
  expect(await autocheckpoint(db)).toBe(CHECKPOINT_BACKSTOP_PAGES);
  const second = await disposeConnection(db);
  expect(second).not.toBe(first);

  await checkpoints.close();
  await disposeConnection(db);
  expect(await autocheckpoint(db)).toBe(1000);
  expect(warnings).toEqual([]);
});

it('looks at the log once a transaction has committed, not while it runs', async () => {
  const db = await serviceDatabase();
  const checkpoints = await checkpointer(db);
  // Long enough for looks to fall inside it, which see none of its pages yet.
  await db.transaction(async (trx) => {
    for (let i = 0; i < 1100; i += 1) await trx('filler').insert({ id: i, body: Buffer.alloc(4000, i % 251) });
    await new Promise((resolve) => setTimeout(resolve, 250));
  });
  await waitUntil(() => checkpoints.stats.checkpoints > 0, 'checkpointed');
  expect(checkpoints.stats.last.checkpointed).toBeGreaterThanOrEqual(1000);
});

it('tries a failed checkpoint again after a pause, not at every write, and says once that it failed and once that it runs again', async () => {
  const db = await serviceDatabase();
  // Well above the 100 ms between looks, which a retry at every write would take; well below the 5 s default.
  const retryAfterMs = 600;
  const checkpoints = await checkpointer(db, { retryAfterMs });
  // The checkpointing connection's driver fails its first two checkpoints, as on a full disk, then runs them.
  const { Database } = createRequire(import.meta.url)('sqlite3') as typeof import('sqlite3');
  const get = Database.prototype.get;
  const tries: number[] = [];
  Database.prototype.get = function (this: InstanceType<typeof Database>, sql: string, ...rest: unknown[]) {
    if (!sql.startsWith('PRAGMA wal_checkpoint')) return get.call(this, sql, ...(rest as []));
    tries.push(performance.now());
    if (tries.length > 2) return get.call(this, sql, ...(rest as []));
    const callback = rest.at(-1) as (err: Error) => void;
    setImmediate(() => callback(Object.assign(new Error('SQLITE_FULL: database or disk is full'), { code: 'SQLITE_FULL' })));
    return this;
  } as typeof get;
  let triedBeforeSuccess: number[];
  try {
    await writeRows(db, 0, 1100);
    await waitUntil(() => tries.length > 0, 'tried');
    // Writes meanwhile do not bring the next try forward.
    await writeRows(db, 1100, 20);
    await waitUntil(() => checkpoints.stats.checkpoints > 0, 'checkpointed again', 15_000);
    triedBeforeSuccess = [...tries];
  } finally {
    Database.prototype.get = get;
  }
  expect(triedBeforeSuccess).toHaveLength(3);
  const [first, second, third] = triedBeforeSuccess as [number, number, number];
  expect(second - first).toBeGreaterThanOrEqual(retryAfterMs - 50);
  expect(third - second).toBeGreaterThanOrEqual(retryAfterMs - 50);
  // The pause it was given, not the default's 5 s.
  expect(third - first).toBeLessThan(4000);
  expect(warnings).toHaveLength(1);
  expect(notices).toEqual(['background checkpoints run again']);
}, 30_000);

it('gives the disk back: the log’s file a burst grew is cut back at the first commit after it is copied', async () => {
  const db = await serviceDatabase();
  const checkpoints = await checkpointer(db);
  const logBytes = async () => (await stat(`${sqliteFile(dir)}-wal`)).size;
  await db.transaction(async (trx) => {
    for (let i = 0; i < 3000; i += 1) await trx('filler').insert({ id: i, body: Buffer.alloc(4000, i % 251) });
  });
  // 12 MB copied and synced: on a loaded machine that can take seconds.
  await waitUntil(() => checkpoints.stats.checkpoints > 0 && checkpoints.stats.last.checkpointed === checkpoints.stats.last.log, 'all of it copied', 20_000);
  expect(await logBytes()).toBeGreaterThan(WAL_SIZE_LIMIT);
  await writeRows(db, 3000, 1);
  expect(await logBytes()).toBeLessThanOrEqual(WAL_SIZE_LIMIT);
  expect(await db('filler').count({ n: '*' })).toEqual([{ n: 3001 }]);
}, 40_000);

it('runs beside another connection’s checkpointer on the same file (as in another process): one checkpoint at a time, no error', async () => {
  const first = await serviceDatabase();
  const second = await serviceDatabase();
  const a = await checkpointer(first);
  const b = await checkpointer(second);
  await Promise.all([writeRows(first, 0, 800), writeRows(second, 1000, 800)]);
  await waitUntil(() => a.stats.checkpoints + b.stats.checkpoints > 0, 'checkpointed');
  expect(await second('filler').count({ n: '*' })).toEqual([{ n: 1600 }]);
  expect(warnings).toEqual([]);
});

it('leaves the server to SQLite’s own checkpoints when it cannot start or cannot read the log’s index, and does nothing on PostgreSQL', async () => {
  // A database not opened yet: no file for the checkpointer's connection to open.
  const unopened = openDatabase({ dataDir: path.join(dir, 'unopened') });
  opened.push(unopened);
  expect(await checkpointInBackground(unopened, { dataDir: path.join(dir, 'unopened') }, log)).toBeNull();
  expect(warnings).toHaveLength(1);

  // The log's index replaced by something that is not one: a folder, which opens but cannot be read.
  const db = await serviceDatabase();
  await rm(`${sqliteFile(dir)}-shm`);
  await mkdir(`${sqliteFile(dir)}-shm`);
  const checkpoints = await checkpointer(db);
  expect(await autocheckpoint(db)).toBe(CHECKPOINT_BACKSTOP_PAGES);
  await waitUntil(async () => (await autocheckpoint(db)) === 1000, 'handed back to SQLite');
  expect(warnings).toHaveLength(2);
  expect(checkpoints.stats.checkpoints).toBe(0);

  expect(await checkpointInBackground(db, { dataDir: dir, databaseUrl: 'postgres://nowhere/db' }, log)).toBeNull();
});
