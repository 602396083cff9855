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
export function sqliteConfig(dataDir: string, opts: { checkpointsInBackground?: boolean } = {}): Knex.Config {
  mkdirSync(dataDir, { recursive: true });
  // SQLite's default (1,000 pages), unless `BackgroundCheckpoints` copies the log meanwhile.
  const autocheckpoint = opts.checkpointsInBackground ? CHECKPOINT_BACKSTOP_PAGES : 1000;
  return {
    // Knex takes a client class in place of a driver name; its types only know its own base class.
    client: PreparingSqliteClient as unknown as Knex.Config['client'],
    connection: { filename: sqliteFile(dataDir) },
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
        conn.exec(
          `PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = ${autocheckpoint};`,
          (err) => done(err, conn),
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


/** The database file of a data folder. */
export function sqliteFile(dataDir: string): string {
  return path.join(dataDir, 'service.sqlite');
}

/**
 * How long the write-ahead log may grow (in pages of 4 KiB, about 40 MB) before the service's own
 * connection copies it into the database file itself, when `BackgroundCheckpoints` runs: only
 * under writes so steady that a background checkpoint never finds the log still (below).
 */
export const CHECKPOINT_BACKSTOP_PAGES = 10_000;
/** How often `BackgroundCheckpoints` looks for pages written since it last copied (ms). */
const CHECKPOINT_EVERY_MS = 100;

/** What `BackgroundCheckpoints` reports to: its failures, and when they stop. */
interface CheckpointLog {
  warn(details: object, message: string): void;
  info(details: object, message: string): void;
}

/**
 * Copies the write-ahead log into the database file from a connection of its own, on its own
 * thread, so that no request waits for it.
 *
 * In WAL mode a commit only appends to the log; a checkpoint copies the logged pages into the
 * database file, with an fsync of the log before and of the database after (2–3 ms each on the
 * machines we measured). SQLite runs one by itself inside the commit that takes the log past
 * 1,000 pages, on the committing connection: with one connection per process, every request's
 * statements then waited behind those fsyncs, several times a second under steady writes
 * (`POST /refreshToken` writes about 7 pages). Here a second connection runs a PASSIVE
 * checkpoint every `CHECKPOINT_EVERY_MS` after the service wrote anything: it takes no lock a
 * writer or a reader waits for, and syncs exactly as SQLite's own does (`synchronous = NORMAL`),
 * so what a crash or a power loss can lose is unchanged.
 *
 * The log starts again from its beginning only once a checkpoint has copied all of it and the
 * next write begins. Under writes too steady for that (each checkpoint finds new pages), it grows
 * until the service's connection checkpoints it itself at `CHECKPOINT_BACKSTOP_PAGES`, by then
 * with at most the last interval's pages left to copy. Several processes on one file each run
 * one; SQLite lets one checkpoint run at a time, and the others skip that turn.
 */
export class BackgroundCheckpoints {
  readonly #connection: sqlite3.Database;
  readonly #db: Knex;
  readonly #log: CheckpointLog;
  readonly #onQuery = (query: { method?: unknown }): void => {
    if (query.method === 'select' || query.method === 'first' || query.method === 'pluck') return;
    this.#written = true;
    this.#schedule();
  };
  /** Something was written since the last checkpoint began. */
  #written = false;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #closed = false;
  #failing = false;
  /** Checkpoints run on a log with pages in it, and what the last one found: its pages, and how many are in the database now. */
  readonly stats = { checkpoints: 0, last: { log: 0, checkpointed: 0 } };

  private constructor(connection: sqlite3.Database, db: Knex, log: CheckpointLog) {
    this.#connection = connection;
    this.#db = db;
    this.#log = log;
    db.on('query', this.#onQuery);
    // What was written before it started (migrations) is copied too.
    this.#written = true;
    this.#schedule();
  }

  /** A checkpoint `CHECKPOINT_EVERY_MS` from now, unless one is due or running (which schedules the next when done). */
  #schedule(): void {
    if (this.#timer || this.#running || this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#running = this.#checkpoint().finally(() => {
        this.#running = null;
        if (this.#written) this.#schedule();
      });
    }, CHECKPOINT_EVERY_MS);
    // A process with nothing else to do may exit: its last connection to close checkpoints.
    this.#timer.unref();
  }

  /** Opens the checkpointing connection on `dataDir`'s database, which `db` (its service connection) has migrated. */
  static async start(db: Knex, dataDir: string, log: CheckpointLog): Promise<BackgroundCheckpoints> {
    const driver = createRequire(import.meta.url)('sqlite3') as typeof sqlite3;
    const connection = await new Promise<sqlite3.Database>((resolve, reject) => {
      const opened: sqlite3.Database = new driver.Database(sqliteFile(dataDir), driver.OPEN_READWRITE, (err) => (err ? reject(err) : resolve(opened)));
    });
    // It never writes; a checkpoint by another process meanwhile is not waited for.
    await new Promise<void>((resolve, reject) =>
      connection.exec('PRAGMA busy_timeout = 0; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0;', (err) => (err ? reject(err) : resolve())),
    );
    return new BackgroundCheckpoints(connection, db, log);
  }

  async #checkpoint(): Promise<void> {
    this.#written = false;
    try {
      const row = await new Promise<{ busy: number; log: number; checkpointed: number } | undefined>((resolve, reject) =>
        this.#connection.get('PRAGMA wal_checkpoint(PASSIVE)', (err, found) => (err ? reject(err) : resolve(found as never))),
      );
      if (this.#failing) this.#log.info({}, 'background checkpoints run again');
      this.#failing = false;
      // Another process's checkpoint was running: this one's pages are left for the next turn.
      if (row?.busy) this.#written = true;
      else if (row && row.log > 0) {
        this.stats.checkpoints += 1;
        this.stats.last = { log: row.log, checkpointed: row.checkpointed };
      }
    } catch (error) {
      // The next write tries again; the service's connection checkpoints at the backstop anyway.
      this.#written = true;
      if (!this.#failing) this.#log.warn({ err: error }, 'background checkpoint failed');
      this.#failing = true;
    }
  }

  /** Stops checkpointing (a checkpoint under way finishes first) and closes the connection. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#db.off('query', this.#onQuery);
    await this.#running;
    await new Promise<void>((resolve, reject) => this.#connection.close((err) => (err ? reject(err) : resolve())));
  }
}
