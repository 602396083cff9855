/**
 * SQLite's write-ahead log copied into the database file by `BackgroundCheckpoints`, from a
 * connection of its own, instead of inside the commit that takes the log past 1,000 pages: a log
 * under 1,000 uncopied pages is left alone (each complete checkpoint makes the next write start
 * the log again and sync its header, so checkpoints stay as rare as SQLite's own), one past it is
 * copied after the service's writes, two processes' checkpointers on one file take turns, and a
 * checkpointer that cannot start leaves the server to SQLite's own checkpoints.
 */
import { rm, stat } from 'node:fs/promises';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { checkpointInBackground, openDatabase, type Db } from '../../db/knex.ts';
import { BackgroundCheckpoints, CHECKPOINT_BACKSTOP_PAGES, sqliteFile } from '../../db/sqlite.ts';
import { tempDir } from '../helpers/server.ts';
import { waitUntil } from '../helpers/wait.ts';

let dir: string;
const opened: Db[] = [];
const started: BackgroundCheckpoints[] = [];
const warnings: unknown[] = [];
const log = { warn: (details: object) => warnings.push(details), info: () => undefined };

beforeEach(async () => {
  dir = await tempDir();
  warnings.length = 0;
});
afterEach(async () => {
  await Promise.all(started.splice(0).map((checkpoints) => checkpoints.close()));
  await Promise.all(opened.splice(0).map((db) => db.destroy()));
  await rm(dir, { recursive: true, force: true });
});

async function serviceDatabase(): Promise<Db> {
  const db = openDatabase({ dataDir: dir }, { checkpointsInBackground: true });
  opened.push(db);
  if (!(await db.schema.hasTable('filler'))) {
    await db.schema.createTable('filler', (t) => {
      t.integer('id').primary();
      t.binary('body');
    });
  }
  return db;
}

async function checkpointer(db: Db): Promise<BackgroundCheckpoints> {
  const checkpoints = await checkpointInBackground(db, { dataDir: dir }, log);
  if (!checkpoints) throw new Error('no checkpointer');
  started.push(checkpoints);
  return checkpoints;
}

/** `count` rows of 4,000 bytes, a page each, one commit per row as requests write. */
async function writeRows(db: Db, from: number, count: number): Promise<void> {
  for (let i = from; i < from + count; i += 1) await db('filler').insert({ id: i, body: Buffer.alloc(4000, i % 251) });
}

const fileBytes = async () => (await stat(sqliteFile(dir))).size;

it('leaves a log under 1,000 uncopied pages alone, and copies one past it from its own connection', async () => {
  const db = await serviceDatabase();
  // The service's connection checkpoints only at the backstop.
  expect(await db.raw('PRAGMA wal_autocheckpoint')).toEqual([{ wal_autocheckpoint: CHECKPOINT_BACKSTOP_PAGES }]);
  const checkpoints = await checkpointer(db);
  const before = await fileBytes();

  await writeRows(db, 0, 200);
  const looked = checkpoints.stats.looksUnder;
  await waitUntil(() => checkpoints.stats.looksUnder > looked, 'looked at after the writes');
  expect(checkpoints.stats.checkpoints).toBe(0);
  expect(await fileBytes()).toBe(before);

  await writeRows(db, 200, 1100);
  await waitUntil(() => checkpoints.stats.checkpoints > 0, 'checkpointed');
  // All of the log as the checkpoint found it, now in the database file.
  expect(checkpoints.stats.last.log).toBeGreaterThanOrEqual(1000);
  expect(checkpoints.stats.last.checkpointed).toBe(checkpoints.stats.last.log);
  // Each commit logs its row's page and rewrites the pages above it: 1,000 logged pages hold a few hundred rows.
  expect(await fileBytes()).toBeGreaterThan(before + 1_000_000);
  expect(warnings).toEqual([]);

  const listening = db.listenerCount('query-response');
  await checkpoints.close();
  await checkpoints.close();
  // Closed: it no longer follows the service's writes.
  expect(db.listenerCount('query-response')).toBe(listening - 1);
});

it('runs beside another process’s checkpointer on the same file: one checkpoint at a time, no error', async () => {
  const first = await serviceDatabase();
  const second = await serviceDatabase();
  const a = await checkpointer(first);
  const b = await checkpointer(second);
  await Promise.all([writeRows(first, 0, 800), writeRows(second, 1000, 800)]);
  await waitUntil(() => a.stats.checkpoints + b.stats.checkpoints > 0, 'checkpointed');
  expect(await second('filler').count({ n: '*' })).toEqual([{ n: 1600 }]);
  expect(warnings).toEqual([]);
});

it('leaves the server to SQLite’s own checkpoints when it cannot start, and does nothing on PostgreSQL', async () => {
  // No database file to open (the service's connection would have made it).
  expect(await checkpointInBackground({} as Db, { dataDir: dir }, log)).toBeNull();
  expect(warnings).toHaveLength(1);
  expect(await checkpointInBackground({} as Db, { dataDir: dir, databaseUrl: 'postgres://nowhere/db' }, log)).toBeNull();
});
