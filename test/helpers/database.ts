/**
 * The database of a test server. A test run on SQLite (the default) gives every data folder its
 * own SQLite file. A run on PostgreSQL (`DATABASE_URL` set for `npm test`, as `.ci/run`'s second
 * run does) gives every data folder its own database on that server, made on first use, so tests
 * stay as independent as their folders; `dropTestDatabase` drops it when the test is done with
 * the folder, and the run's teardown drops any a failed test left behind.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { openDatabase, type Db } from '../../db/knex.ts';

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
 * The variables that point a server (or a child process) at the database of `dataDir`: none on
 * SQLite, `DATABASE_URL` of the folder's own database (made if new) on PostgreSQL.
 */
export async function testDatabaseEnv(dataDir: string): Promise<Record<string, string>> {
  if (!TEST_POSTGRES_URL) return {};
  const name = nameFor(dataDir);
  const exists = await onTestServer('select 1 from pg_database where datname = $1', [name]);
  if (exists.rowCount === 0) {
    try {
      await onTestServer(`create database "${name}"`);
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

/** The database of `dataDir` opened directly (no server), as the server would open it. */
export async function openTestDatabase(dataDir: string): Promise<Db> {
  return openDatabase({ dataDir, databaseUrl: (await testDatabaseEnv(dataDir)).DATABASE_URL });
}
