/**
 * The database of a test server. A test run on SQLite (the default) gives every data folder its
 * own SQLite file. A run on PostgreSQL (`DATABASE_URL` set for `npm test`, as `.ci/run`'s second
 * run does) gives every data folder its own database on that server, made on first use, so tests
 * stay as independent as their folders; `dropTestDatabase` drops it when the test is done with
 * the folder, and the run's teardown drops any a failed test left behind. A folder `startServer`
 * makes itself gets a copy of the run's migrated database instead (`migratedTestDatabaseEnv`).
 */
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { migrateToLatest, openDatabase, type Db } from '../../db/knex.ts';

/** The server the run's databases are made on (its `postgres` database), or none: SQLite. */
export const TEST_POSTGRES_URL = process.env.DATABASE_URL || undefined;

/**
 * Made databases are named `t_`, the run's id (set by the run's global set-up, so that two runs
 * on one server never drop each other's) and a hash of their folder's path.
 */
export const TEST_DATABASE_PREFIX = 't_';

export function runPrefix(): string {
  return `${TEST_DATABASE_PREFIX}${process.env.TEST_DATABASE_RUN ?? 'x'}_`;
}

function nameFor(dataDir: string): string {
  return runPrefix() + createHash('sha256').update(dataDir).digest('hex').slice(0, 24);
}

function urlOf(name: string): string {
  const url = new URL(TEST_POSTGRES_URL!);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs one statement on the server's `postgres` database. */
export async function onTestServer(sql: string, values: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
  await client.connect();
  try {
    return await client.query(sql, values);
  } finally {
    await client.end();
  }
}

/**
 * How a test database is copied from its template. PostgreSQL 15 copies it page by page through
 * the write-ahead log by default; copying the files instead took a third of the time (50 against
 * 155–170 ms for the run's migrated database, hundreds of times a run) on `.ci/postgres`'s
 * throwaway cluster. A file copy checkpoints the whole server before and after, which costs
 * little only where nothing is synced (`fsync = off`), so it is taken only there; older servers
 * have no `STRATEGY` to name. A failed look is not kept: the next database asks again.
 */
let copyStrategy: Promise<string> | undefined;
function strategyClause(): Promise<string> {
  copyStrategy ??= onTestServer("select current_setting('server_version_num')::int >= 150000 and current_setting('fsync') = 'off' as file_copy").then(
    (result) => ((result.rows[0] as { file_copy: boolean }).file_copy ? ' strategy file_copy' : ''),
    (error: unknown) => {
      copyStrategy = undefined;
      throw error;
    },
  );
  return copyStrategy;
}

/**
 * The variables that point a server (or a child process) at the database of `dataDir`: none on
 * SQLite, `DATABASE_URL` of the folder's own database on PostgreSQL. A new one is made empty,
 * or with `migrated` as a copy of the run's migrated database (`migratedName`).
 */
export async function testDatabaseEnv(dataDir: string, from: { migrated?: boolean } = {}): Promise<Record<string, string>> {
  if (!TEST_POSTGRES_URL) return {};
  const name = nameFor(dataDir);
  const exists = await onTestServer('select 1 from pg_database where datname = $1', [name]);
  if (exists.rowCount === 0) {
    try {
      await onTestServer(`create database "${name}"${from.migrated ? ` template "${migratedName()}"` : ''}${await strategyClause()}`);
    } catch (error) {
      // Made meanwhile by another server of the same test on the same folder.
      if ((error as { code?: string }).code !== '42P04' && (error as { code?: string }).code !== '23505') throw error;
    }
  }
  return { DATABASE_URL: urlOf(name) };
}

/** Drops the database of `dataDir` (nothing on SQLite), ending any connection still open to it. */
export async function dropTestDatabase(dataDir: string): Promise<void> {
  if (!TEST_POSTGRES_URL) return;
  await onTestServer(`drop database if exists "${nameFor(dataDir)}" with (force)`);
}

/** A statement as Knex's `query` event reports it. */
export interface SentStatement {
  sql: string;
  bindings: unknown[];
}

/** The statements `work` sends through `db`, in order, as Knex's `query` event reports them. */
export async function statementsSent(db: Db, work: () => Promise<unknown>): Promise<SentStatement[]> {
  const sent: SentStatement[] = [];
  const listener = (query: { sql: string; bindings?: unknown[] }) => sent.push({ sql: query.sql, bindings: query.bindings ?? [] });
  db.on('query', listener);
  try {
    await work();
  } finally {
    db.off('query', listener);
  }
  return sent;
}

/** The database of `dataDir` opened directly (no server), as the server would open it. */
export async function openTestDatabase(dataDir: string): Promise<Db> {
  return openDatabase({ dataDir, databaseUrl: (await testDatabaseEnv(dataDir)).DATABASE_URL });
}

/**
 * The run's migrated database, made once by the global set-up (`makeMigratedDatabase`), which
 * `startServer` copies for each folder it makes itself: migrating every test server's new
 * database from nothing took 0.3–0.45 s on PostgreSQL (a copy 0.1–0.15 s) and 0.14 s on SQLite,
 * hundreds of times a run. A test that starts a server on a folder of its own, and a child
 * process or the admin command on a new folder, still begin with an empty database and migrate
 * it, as a first start does; `test/db/migrations.test.ts` and the first-start tests run the
 * migrations themselves.
 */
function migratedName(): string {
  return `${runPrefix()}migrated`;
}

/** Where the migrated SQLite file of the run is (set by the global set-up for the workers). */
const MIGRATED_SQLITE = 'TEST_MIGRATED_SQLITE';

/**
 * Makes the run's migrated database (`migratedName` on PostgreSQL, a SQLite file in a folder of
 * its own otherwise), and answers what removes it at the end of the run.
 */
export async function makeMigratedDatabase(): Promise<() => Promise<void>> {
  if (TEST_POSTGRES_URL) {
    const drop = async () => void (await onTestServer(`drop database if exists "${migratedName()}" with (force)`));
    await onTestServer(`create database "${migratedName()}"`);
    await migrateOnce(openDatabase({ dataDir: tmpdir(), databaseUrl: urlOf(migratedName()) }), drop);
    return drop;
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'service-test-migrated-'));
  const remove = () => rm(dir, { recursive: true, force: true });
  const file = path.join(dir, 'service.sqlite');
  await migrateOnce(openDatabase({ dataDir: dir }), remove, {
    // Everything into the file itself, which is all that is copied.
    beforeClose: (db) => db.raw('PRAGMA wal_checkpoint(TRUNCATE)'),
    afterClose: async () => {
      const wal = await stat(`${file}-wal`).catch(() => null);
      if (wal && wal.size > 0) throw new Error(`the migrated SQLite database kept ${wal.size} bytes in its write-ahead log`);
    },
  });
  process.env[MIGRATED_SQLITE] = file;
  return remove;
}

/**
 * Migrates `db` (then `beforeClose`), closes it (then `afterClose`); on a failure, once `db` is
 * closed, `undo` removes what was made.
 */
async function migrateOnce(db: Db, undo: () => Promise<void>, steps: { beforeClose?: (db: Db) => Promise<unknown>; afterClose?: () => Promise<void> } = {}): Promise<void> {
  try {
    try {
      await migrateToLatest(db);
      await steps.beforeClose?.(db);
    } finally {
      await db.destroy();
    }
    await steps.afterClose?.();
  } catch (error) {
    await undo();
    throw error;
  }
}

/**
 * The variables that point a server at a migrated database of its own for `dataDir`, a new
 * folder: a copy of the run's migrated database (see `migratedName`).
 */
export async function migratedTestDatabaseEnv(dataDir: string): Promise<Record<string, string>> {
  if (TEST_POSTGRES_URL) return testDatabaseEnv(dataDir, { migrated: true });
  const migrated = process.env[MIGRATED_SQLITE];
  if (!migrated) throw new Error(`${MIGRATED_SQLITE} is not set: vitest.config.ts's global set-up makes it`);
  await mkdir(dataDir, { recursive: true });
  await copyFile(migrated, path.join(dataDir, 'service.sqlite'));
  return {};
}
