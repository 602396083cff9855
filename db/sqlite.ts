import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Knex } from 'knex';
import type sqlite3 from 'sqlite3';

/**
 * The SQLite database of an embedded install: a file at `$DATA_DIR/service.sqlite`.
 *
 * SQLITE-ONLY: this file is the one place that knows the database is SQLite (the driver, the
 * file, the pragmas); `postgres.ts` is its PostgreSQL counterpart.
 */
export function sqliteConfig(dataDir: string): Knex.Config {
  mkdirSync(dataDir, { recursive: true });
  return {
    // Knex takes a client class in place of a driver name; its types only know its own base class.
    client: PreparingSqliteClient as unknown as Knex.Config['client'],
    connection: { filename: path.join(dataDir, 'service.sqlite') },
    useNullAsDefault: true,
    pool: {
      // One connection: SQLite serialises writers anyway, and one connection makes every
      // transaction see its own writes without lock errors. Several processes on one file take
      // turns through the write lock each transaction takes when it begins.
      min: 1,
      max: 1,
      afterCreate(conn: sqlite3.Database, done: (err: Error | null, conn: sqlite3.Database) => void) {
        // synchronous = NORMAL: in WAL mode a commit no longer waits for an fsync (2 to 3 ms
        // each on the machines we measured, and every write request waited behind it on the one
        // connection); the database stays consistent after a crash, and a power loss can only
        // lose the last commits before it. See the README's Performance section.
        // busy_timeout first: setting WAL mode needs the lock another process starting on the
        // same new file may hold.
        conn.exec('PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;', (err) =>
          done(err, conn),
        );
      },
    },
  };
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
export class PreparingSqliteClient extends SqliteClient {
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

