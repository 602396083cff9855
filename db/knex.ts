import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import { RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type sqlite3 from 'sqlite3';
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
    // Knex takes a client class in place of a driver name; its types only know its own base class.
    client: PreparingSqliteClient as unknown as Knex.Config['client'],
    connection: { filename: path.join(dataDir, 'service.sqlite') },
    useNullAsDefault: true,
    // Knex would write the query's values into an error's message; they may be secrets (hashes,
    // emails), and messages are logged.
    compileSqlOnError: false,
    pool: {
      // One connection: SQLite serialises writers anyway, and one connection makes every
      // transaction see its own writes without lock errors.
      min: 1,
      max: 1,
      afterCreate(conn: sqlite3.Database, done: (err: Error | null, conn: sqlite3.Database) => void) {
        // synchronous = NORMAL: in WAL mode a commit no longer waits for an fsync (2 to 3 ms
        // each on the machines we measured, and every write request waited behind it on the one
        // connection); the database stays consistent after a crash, and a power loss can only
        // lose the last commits before it. See the README's Performance section.
        conn.exec('PRAGMA foreign_keys = ON; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;', (err) =>
          done(err, conn),
        );
      },
    },
    migrations: { migrationSource },
  });
}

/** The part of Knex's own sqlite3 client this file relies on (Knex ships no types for it). */
interface KnexSqliteClient {
  _query(connection: sqlite3.Database, obj: KnexQuery): Promise<KnexQuery>;
  destroyRawConnection(connection: sqlite3.Database): Promise<void>;
}
interface KnexQuery {
  sql?: string;
  bindings?: unknown[];
  method?: string;
  returning?: unknown;
  response?: unknown;
  context?: unknown;
}
const SqliteClient = createRequire(import.meta.url)('knex/lib/dialects/sqlite3/index.js') as new (config: Knex.Config) => KnexSqliteClient;

/** Prepared statements kept per connection, by SQL text; the least recently used go first. */
const STATEMENTS_KEPT = 200;
const statementsOf = new WeakMap<sqlite3.Database, Map<string, Promise<sqlite3.Statement>>>();

/**
 * Knex's sqlite3 client, with each connection's prepared statements kept and reused. The
 * sqlite3 driver otherwise prepares, runs and finalises every query as separate jobs on the
 * thread pool; a kept statement runs in one. The same queries, a third of the CPU each (about
 * 240 µs down to 80 µs for a lookup by key, measured by `npm run bench`'s machine).
 */
class PreparingSqliteClient extends SqliteClient {
  override async _query(connection: sqlite3.Database, obj: KnexQuery): Promise<KnexQuery> {
    if (!obj.sql) throw new Error('The query is empty');
    const sql = obj.sql;
    // As Knex's own client: rows back for reads (and RETURNING), lastID and changes for writes.
    const method = obj.method === 'insert' || obj.method === 'update' ? (obj.returning ? 'all' : 'run') : obj.method === 'counter' || obj.method === 'del' ? 'run' : 'all';
    const statement = await prepared(connection, sql);
    return new Promise((resolve, reject) => {
      const done = function (this: sqlite3.RunResult, err: Error | null, rows?: unknown) {
        if (err) {
          failed(connection, statement, sql, err).then(() => reject(err), reject);
          return;
        }
        obj.response = rows;
        // `this` holds lastID and changes, which Knex reads for inserts, updates and deletes.
        obj.context = this;
        resolve(obj);
      };
      if (method === 'run') statement.run(obj.bindings ?? [], done);
      else statement.all(obj.bindings ?? [], done);
    });
  }

  /** Transactions take the write lock when they begin (see `ImmediateTransaction`). */
  transaction(...args: unknown[]): unknown {
    return new ImmediateTransaction(this, ...args);
  }

  override async destroyRawConnection(connection: sqlite3.Database): Promise<void> {
    // A connection with statements still open cannot close.
    const kept = [...(statementsOf.get(connection)?.values() ?? [])];
    statementsOf.delete(connection);
    await Promise.all(kept.map((p) => p.then(finalize, () => undefined)));
    await super.destroyRawConnection(connection);
  }
}

const SqliteTransaction = createRequire(import.meta.url)('knex/lib/dialects/sqlite3/execution/sqlite-transaction.js') as new (
  client: unknown,
  ...args: unknown[]
) => { query(conn: sqlite3.Database, sql: string): Promise<unknown> };

/**
 * A transaction that begins with `BEGIN IMMEDIATE`. Knex's plain `BEGIN` defers the write lock
 * to the first write, and a transaction that has read and then finds another connection (the
 * admin command, another server) has written meanwhile cannot wait: SQLite answers SQLITE_BUSY
 * at once, whatever the busy timeout. Taking the lock up front waits (up to the busy timeout)
 * before anything is read, and then never meets a lock again. One connection per process means
 * transactions never wait for each other in a process anyway.
 */
class ImmediateTransaction extends SqliteTransaction {
  begin(conn: sqlite3.Database): Promise<unknown> {
    return this.query(conn, 'BEGIN IMMEDIATE;');
  }
}

/**
 * After a statement failed: SQLite pauses (does not finish) a statement that met a lock, and a
 * kept statement left so holds its read snapshot on the connection; every later write on the
 * connection then fails with SQLITE_BUSY at once, long after the lock is gone. So it is reset.
 * A failed COMMIT leaves its transaction open (Knex only reports it): it is rolled back, and a
 * connection that cannot even roll back is thrown away, so the pool opens a clean one.
 */
async function failed(connection: sqlite3.Database, statement: sqlite3.Statement, sql: string, error: Error): Promise<void> {
  await new Promise<void>((resolve) => statement.reset(() => resolve()));
  const ended = (err: Error | null) => !err || /no transaction is active/.test(err.message);
  if (/^\s*rollback\b/i.test(sql)) {
    if (!ended(error)) dispose(connection, error);
  } else if (/^\s*(commit|end)\b/i.test(sql)) {
    await new Promise<void>((resolve) =>
      connection.exec('ROLLBACK', (err) => {
        if (!ended(err)) dispose(connection, err!);
        resolve();
      }),
    );
  }
}

/** Marks a connection for Knex's pool to close and replace when it is next acquired. */
function dispose(connection: sqlite3.Database, reason: Error): void {
  (connection as sqlite3.Database & { __knex__disposed?: unknown }).__knex__disposed = reason;
}

/** The connection's prepared statement for `sql`, prepared on first use. */
function prepared(connection: sqlite3.Database, sql: string): Promise<sqlite3.Statement> {
  let kept = statementsOf.get(connection);
  if (!kept) statementsOf.set(connection, (kept = new Map()));
  const found = kept.get(sql);
  if (found) {
    kept.delete(sql);
    kept.set(sql, found);
    return found;
  }
  // Waits for the statement to be prepared: a statement that fails to prepare (a syntax error,
  // a missing table) would never call back a run queued on it.
  const statement = new Promise<sqlite3.Statement>((resolve, reject) => {
    const s: sqlite3.Statement = connection.prepare(sql, (err) => (err ? reject(err) : resolve(s)));
  });
  const map = kept;
  statement.catch(() => map.delete(sql));
  kept.set(sql, statement);
  if (kept.size > STATEMENTS_KEPT) {
    const [oldest, evicted] = kept.entries().next().value as [string, Promise<sqlite3.Statement>];
    kept.delete(oldest);
    evicted.then(finalize, () => undefined);
  }
  return statement;
}

function finalize(statement: sqlite3.Statement): Promise<void> {
  return new Promise((resolve) => statement.finalize(() => resolve()));
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

/**
 * Runs the pending migrations, all in one transaction, bookkeeping included: Knex's own
 * creation of its tables and its lock row happens outside its transactions, so two processes
 * starting on a new data folder (the server and an admin command) could both create them and
 * fail, or leave two lock rows that lock migrations for good. Inside one IMMEDIATE transaction
 * they take turns; a process killed half-way leaves nothing behind.
 */
export async function migrateToLatest(db: Db): Promise<void> {
  await db.transaction((trx) => trx.migrate.latest());
}

/** Where the rate limiters keep their counters, and how to let go of it. */
export interface RateLimiterStore {
  limiter(rule: { keyPrefix: string; points: number; duration: number }): RateLimiterAbstract;
  close(): Promise<void>;
}

/**
 * Rate limiters whose counters live in the `rate_limits` table (created by a migration), on the
 * service's own connection. Each count is one statement (an upsert that answers the new count),
 * so it needs no transaction, and the process has one writer: a flood of counted requests queues
 * behind other writes instead of racing them for SQLite's lock from a second connection.
 * Never count a try inside a transaction: the one connection would wait for itself.
 */
export function openRateLimiterStore(db: Db): RateLimiterStore {
  return {
    limiter: (rule) => new TableRateLimiter(db, rule),
    close: async () => undefined,
  };
}

const RateLimiterStoreAbstract = createRequire(import.meta.url)('rate-limiter-flexible/lib/RateLimiterStoreAbstract.js') as new (opts: {
  keyPrefix: string;
  points: number;
  duration: number;
}) => RateLimiterAbstract & { points: number };

interface Counter {
  points: number;
  expire: number | null;
}

/**
 * rate-limiter-flexible's store interface over Knex, in the table layout of its SQLite store
 * (`key`, `points`, `expire` in ms). The upsert is portable SQL (SQLite 3.35+, PostgreSQL).
 */
class TableRateLimiter extends RateLimiterStoreAbstract {
  readonly #db: Db;

  constructor(db: Db, rule: { keyPrefix: string; points: number; duration: number }) {
    super(rule);
    this.#db = db;
  }

  _getRateLimiterRes(_key: string, changedPoints: number, result: Counter): RateLimiterRes {
    const points = Number(result.points);
    const first = changedPoints === points;
    const consumed = first ? changedPoints : points;
    const msBeforeNext = result.expire === null ? -1 : Math.max(Number(result.expire) - Date.now(), 0);
    return new RateLimiterRes(Math.max(this.points - consumed, 0), msBeforeNext, consumed, first);
  }

  async _upsert(key: string, points: number, msDuration: number, forceExpire = false): Promise<Counter> {
    const now = Date.now();
    const expire = msDuration > 0 ? now + msDuration : null;
    // Past its expiry a counter starts again; `forceExpire` (block, set) replaces it outright.
    const rows: Counter[] = forceExpire
      ? await this.#db.raw(
          'insert into rate_limits (key, points, expire) values (?, ?, ?) on conflict (key) do update set points = excluded.points, expire = excluded.expire returning points, expire',
          [key, points, expire],
        )
      : await this.#db.raw(
          `insert into rate_limits (key, points, expire) values (?, ?, ?) on conflict (key) do update set
             points = case when rate_limits.expire is null or rate_limits.expire > ? then rate_limits.points + excluded.points else excluded.points end,
             expire = case when rate_limits.expire is null or rate_limits.expire > ? then rate_limits.expire else excluded.expire end
           returning points, expire`,
          [key, points, expire, now, now],
        );
    const row = rows[0];
    if (!row) throw new Error('the rate limit counter was not written');
    return row;
  }

  async _get(key: string): Promise<Counter | null> {
    const row: Counter | undefined = await this.#db('rate_limits')
      .where({ key })
      .andWhere((q) => q.where('expire', '>', Date.now()).orWhereNull('expire'))
      .first('points', 'expire');
    return row ?? null;
  }

  async _delete(key: string): Promise<boolean> {
    return (await this.#db('rate_limits').where({ key }).delete()) > 0;
  }
}
