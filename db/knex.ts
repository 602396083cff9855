import { mkdirSync } from 'node:fs';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import { RateLimiterSQLite, type RateLimiterAbstract } from 'rate-limiter-flexible';
import sqlite3 from 'sqlite3';
import { migrations } from './migrations/index.ts';

export type Db = Knex;

/**
 * Opens the database. SQLite is the embedded default: a file at `$DATA_DIR/service.sqlite`.
 *
 * SQLITE-ONLY: this function is the one place that knows the database is SQLite (the
 * driver, the file, the pragmas). Migrations and repositories use Knex's portable builders
 * only, so the same code can run on PostgreSQL.
 */
export function openDatabase(dataDir: string): Db {
  mkdirSync(dataDir, { recursive: true });
  return knex({
    client: 'sqlite3',
    connection: { filename: path.join(dataDir, 'service.sqlite') },
    useNullAsDefault: true,
    pool: {
      // One connection: SQLite serialises writers anyway, and one connection makes every
      // transaction see its own writes without lock errors.
      min: 1,
      max: 1,
      afterCreate(conn: SqliteConnection, done: (err: Error | null, conn: SqliteConnection) => void) {
        conn.exec('PRAGMA foreign_keys = ON; PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000;', (err) =>
          done(err, conn),
        );
      },
    },
    migrations: { migrationSource },
  });
}

interface SqliteConnection {
  exec(sql: string, callback: (err: Error | null) => void): void;
}

/**
 * Migrations are listed in code (`migrations/index.ts`) rather than found by scanning a folder,
 * so the server, the admin command and the tests run exactly the same list.
 */
const migrationSource: Knex.MigrationSource<(typeof migrations)[number]> = {
  getMigrations: async () => migrations,
  getMigrationName: (migration) => migration.name,
  getMigration: async (migration) => migration,
};

export async function migrateToLatest(db: Db): Promise<void> {
  await db.migrate.latest();
}

/** Where the rate limiters keep their counters, and how to let go of it. */
export interface RateLimiterStore {
  limiter(rule: { keyPrefix: string; points: number; duration: number }): RateLimiterAbstract;
  close(): Promise<void>;
}

/**
 * SQLITE-ONLY: rate limiters whose counters live in the `rate_limits` table (created by a
 * migration), on a connection of their own. rate-limiter-flexible's Knex mode hands the pool's
 * connection back while its SAVEPOINT is still open, which breaks the next transaction; its
 * plain sqlite3 mode on a separate connection does not. On PostgreSQL this would be
 * `RateLimiterPostgres` over the Knex pool.
 */
export function openRateLimiterStore(dataDir: string): RateLimiterStore {
  const conn = new sqlite3.Database(path.join(dataDir, 'service.sqlite'));
  conn.configure('busyTimeout', 5000);
  return {
    limiter: (rule) =>
      new RateLimiterSQLite({
        storeClient: conn,
        storeType: 'sqlite3',
        tableName: 'rate_limits',
        tableCreated: true,
        keyPrefix: rule.keyPrefix,
        points: rule.points,
        duration: rule.duration,
      }),
    close: () => new Promise<void>((resolve, reject) => conn.close((err) => (err ? reject(err) : resolve()))),
  };
}
