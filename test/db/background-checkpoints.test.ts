/**
 * SQLite's write-ahead log copied into the database file by `BackgroundCheckpoints`, from a
 * connection of its own, instead of inside the commit that takes the log past 1,000 pages. What
 * the log holds reaches the database file without the service's connection checkpointing, the
 * data reads back whole after the service closes, and two processes' checkpointers on one file
 * take turns without an error.
 */
import { rm, stat } from 'node:fs/promises';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { checkpointInBackground, openDatabase, type Db } from '../../db/knex.ts';
import { BackgroundCheckpoints, CHECKPOINT_BACKSTOP_PAGES, sqliteFile } from '../../db/sqlite.ts';
import { tempDir } from '../helpers/server.ts';
import { waitUntil } from '../helpers/wait.ts';

let dir: string;
const opened: Db[] = [];
const warnings: unknown[] = [];
const log = { warn: (details: object) => warnings.push(details), info: () => undefined };

beforeEach(async () => {
  dir = await tempDir();
  warnings.length = 0;
});
afterEach(async () => {
  await Promise.all(opened.splice(0).map((db) => db.destroy()));
  await rm(dir, { recursive: true, force: true });
});

function serviceDatabase(): Db {
  const db = openDatabase({ dataDir: dir }, { checkpointsInBackground: true });
  opened.push(db);
  return db;
}

/** About 1.2 MB of new pages, one commit per row (as requests write), none of them checkpointed by the writer below the backstop. */
async function writeRows(db: Db, from: number): Promise<void> {
  for (let i = from; i < from + 300; i += 1) await db('filler').insert({ id: i, body: Buffer.alloc(4000, i % 251) });
}

const fileBytes = async () => (await stat(sqliteFile(dir))).size;

it('leaves the log to the backstop on the service connection, and copies it into the database file from its own', async () => {
  const db = serviceDatabase();
  expect(await db.raw('PRAGMA wal_autocheckpoint')).toEqual([{ wal_autocheckpoint: CHECKPOINT_BACKSTOP_PAGES }]);
  await db.schema.createTable('filler', (t) => {
    t.integer('id').primary();
    t.binary('body');
  });
  // Without the background connection, the pages stay in the log: the file does not grow.
  const before = await fileBytes();
  await writeRows(db, 0);
  expect(await fileBytes()).toBe(before);

  const checkpoints = await checkpointInBackground(db, { dataDir: dir }, log);
  expect(checkpoints).toBeInstanceOf(BackgroundCheckpoints);
  await writeRows(db, 300);
  // The log's pages reach the file, all of them as of the last checkpoint.
  await waitUntil(async () => (await fileBytes()) > before + 2_000_000, 'copied into the database file');
  expect(checkpoints!.stats.checkpoints).toBeGreaterThan(0);
  expect(checkpoints!.stats.last.checkpointed).toBe(checkpoints!.stats.last.log);
  const listening = db.listenerCount('query');
  await checkpoints!.close();
  // Closed: it no longer follows the service's writes, which carry on alone.
  expect(db.listenerCount('query')).toBe(listening - 1);
  await writeRows(db, 600);
  await db.destroy();
  opened.length = 0;

  // Everything committed reads back from a new connection.
  const again = serviceDatabase();
  expect(await again('filler').count({ n: '*' })).toEqual([{ n: 900 }]);
  const row = (await again('filler').where({ id: 899 }).first()) as { body: Buffer };
  expect(row.body.equals(Buffer.alloc(4000, 899 % 251))).toBe(true);
  expect(warnings).toEqual([]);
});

it('runs beside another process’s checkpointer on the same file: one checkpoint at a time, no error', async () => {
  const first = serviceDatabase();
  await first.schema.createTable('filler', (t) => {
    t.integer('id').primary();
    t.binary('body');
  });
  const second = serviceDatabase();
  const a = (await checkpointInBackground(first, { dataDir: dir }, log))!;
  const b = (await checkpointInBackground(second, { dataDir: dir }, log))!;
  try {
    await Promise.all([writeRows(first, 0), writeRows(second, 1000), writeRows(first, 2000)]);
    await waitUntil(() => a.stats.checkpoints + b.stats.checkpoints > 0, 'checkpointed');
  } finally {
    await a.close();
    await b.close();
  }
  expect(await second('filler').count({ n: '*' })).toEqual([{ n: 900 }]);
  expect(warnings).toEqual([]);
});

it('does nothing on PostgreSQL', async () => {
  expect(await checkpointInBackground({} as Db, { dataDir: dir, databaseUrl: 'postgres://nowhere/db' }, log)).toBeNull();
});
