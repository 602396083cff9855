import { closeSync, mkdirSync, openSync, readSync } from 'node:fs';
import { endianness } from 'node:os';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Knex } from 'knex';
import type sqlite3 from 'sqlite3';
import { readsOnly, type SentQuery } from './queries.ts';

/**
 * The SQLite database of an embedded install: a file at `$DATA_DIR/service.sqlite`.
 *
 * SQLITE-ONLY: this file is the one place that knows the database is SQLite (the driver, the
 * file, the pragmas); `postgres.ts` is its PostgreSQL counterpart.
 */
export function sqliteConfig(dataDir: string): Knex.Config {
  // Its owner's alone: the database holds password hashes, the session secret and signing keys
  // (`warnIfShared` in services.ts speaks of a folder made otherwise).
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
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
        // lose the last commits before it. See docs/performance.md, Durability.
        // busy_timeout first: setting WAL mode needs the lock another process starting on the
        // same new file may hold.
        // journal_size_limit: see `WAL_SIZE_LIMIT`.
        conn.exec(
          `PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA journal_size_limit = ${WAL_SIZE_LIMIT};`,
          (err) => done(err, conn),
        );
      },
    },
  };
}

/**
 * The size the write-ahead log's file is cut back to when the log starts again after a complete
 * checkpoint (bytes; SQLite's `journal_size_limit`, whose default keeps the file at the largest
 * size it ever reached until the last connection closes). A log that stays under the checkpoint
 * threshold (1,000 pages, about 4 MB) never reaches it; one that a burst of writes grew (up to
 * the backstop's 40 MB, `CHECKPOINT_BACKSTOP_PAGES`) gives the disk back at the first commit after
 * it is copied: SQLite truncates the file then, without a sync.
 */
export const WAL_SIZE_LIMIT = 8 * 1024 * 1024;

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


/** The database file's name in a data folder (backups keep it under the same name). */
export const SQLITE_FILE = 'service.sqlite';

/** The database file of a data folder. */
export function sqliteFile(dataDir: string): string {
  return path.join(dataDir, SQLITE_FILE);
}

/** The file a Knex instance made from `sqliteConfig` works on; null for another database. */
export function sqliteFileOf(db: Knex): string | null {
  const connection = (db.client as { config?: { connection?: unknown } }).config?.connection;
  return db.client instanceof PreparingSqliteClient && typeof connection === 'object' && connection !== null && 'filename' in connection ? String(connection.filename) : null;
}

/**
 * How long the write-ahead log may grow (in pages of 4 KiB, about 40 MB) before the service's own
 * connection copies it into the database file itself, while `BackgroundCheckpoints` runs: only
 * under writes so steady that a background checkpoint never finds the log still (below).
 */
export const CHECKPOINT_BACKSTOP_PAGES = 10_000;
/** SQLite's own threshold: a connection checkpoints in the commit that takes the log to this many pages. */
const SQLITE_AUTOCHECKPOINT_PAGES = 1000;
/** The pages not yet copied at which `BackgroundCheckpoints` copies them (SQLite's own threshold). */
const CHECKPOINT_AT_PAGES = SQLITE_AUTOCHECKPOINT_PAGES;
/** How long after a write `BackgroundCheckpoints` looks at the log (ms). */
const LOOK_AFTER_MS = 100;
/** How long `BackgroundCheckpoints` waits after a failed checkpoint before it tries again (ms), unless told otherwise (`start`'s `retryAfterMs`). */
const RETRY_AFTER_MS = 5000;

/** What `BackgroundCheckpoints` reports to: its failures, and when they stop. */
interface CheckpointLog {
  warn(details: object, message: string): void;
  info(details: object, message: string): void;
}

/** The WAL-index holds its integers in the machine's byte order. */
const LITTLE_ENDIAN = endianness() === 'LE';

/**
 * The pages in the write-ahead log not yet copied into the database file (`mxFrame − nBackfill`),
 * read from the WAL-index header at the start of the `-shm` file
 * (https://sqlite.org/walformat.html: two copies of a 48-byte header, then the checkpoint
 * information; integers in the machine's byte order). `torn`: caught while SQLite writes it (its
 * two copies differ); `unknown`: not the format described.
 */
function uncopiedPages(fd: number, header: Buffer): number | 'torn' | 'unknown' {
  if (readSync(fd, header, 0, header.length, 0) < header.length) return 'unknown';
  if (!header.subarray(0, 48).equals(header.subarray(48, 96))) return 'torn';
  const u32 = (offset: number) => (LITTLE_ENDIAN ? header.readUInt32LE(offset) : header.readUInt32BE(offset));
  // iVersion 3007000, isInit 1.
  if (u32(0) !== 3007000 || header[12] !== 1) return 'unknown';
  return Math.max(u32(16) - u32(96), 0);
}

/**
 * Copies the write-ahead log into the database file from a connection of its own, on its own
 * thread, so that requests do not wait for it.
 *
 * In WAL mode a commit only appends to the log; a checkpoint copies the logged pages into the
 * database file, with an fsync of the log before and of the database after (2–3 ms each on the
 * machines we measured). SQLite runs one by itself inside the commit that takes the log past
 * 1,000 pages, on the committing connection: with one connection per process, every request's
 * statements then waited behind those fsyncs, several times a second under steady writes
 * (`POST /refreshToken` writes about 7 pages). While this runs, the service's connection
 * checkpoints only at `CHECKPOINT_BACKSTOP_PAGES`; `LOOK_AFTER_MS` after a connection that wrote
 * goes back to the pool (its statement or its transaction's commit done), a second connection
 * reads how many pages of the log are not yet copied and, from 1,000 on, runs a PASSIVE
 * checkpoint: it takes no lock a writer or a reader waits for, and syncs exactly as SQLite's own
 * does (`synchronous = NORMAL`), so what a crash or a power loss can lose is unchanged.
 *
 * Once a checkpoint has copied the whole log, the next write starts it again from its beginning
 * and syncs its new header (SQLite does that after its own checkpoints too); as checkpoints run
 * only from 1,000 uncopied pages on, that stays as rare as before. Under writes too steady for
 * any checkpoint to find the log still (each finds new pages), the log grows until the service's
 * connection checkpoints it itself at the backstop, by then with few pages left to copy; the
 * file is cut back to `WAL_SIZE_LIMIT` when the log next starts again. Several processes on one
 * file each run one; SQLite lets one checkpoint run at a time, and the others skip that turn. If
 * it cannot read the log's index, or when it closes, the service's connection gets SQLite's own
 * threshold back. A connection the pool opens anew meanwhile (after one was disposed of) is
 * given the backstop as it opens.
 */
export class BackgroundCheckpoints {
  readonly #connection: sqlite3.Database;
  /** The `-shm` file, read for the log's header (`uncopiedPages`). */
  readonly #index: number;
  readonly #header = Buffer.alloc(136);
  readonly #db: Knex;
  readonly #pool: Pool;
  readonly #log: CheckpointLog;
  readonly #retryAfterMs: number;
  /** A write was sent on the service's connection since it last went back to the pool. */
  #sent = false;
  readonly #onQuery = (query: SentQuery): void => {
    if (!readsOnly(query)) this.#sent = true;
  };
  /** A connection goes back to the pool once its statement, or its transaction's commit, is done. */
  readonly #onRelease = (): void => {
    if (!this.#sent) return;
    this.#sent = false;
    this.#written = true;
    this.#schedule(LOOK_AFTER_MS);
  };
  /**
   * A connection the pool opens anew (after one was disposed of) checkpoints at the backstop too,
   * as the one it replaces did. The pragma is queued on it before the statement it was opened for.
   */
  readonly #onCreate = (_eventId: number, connection: sqlite3.Database): void => {
    if (this.#handedBack || this.#closed) return;
    connection.exec(`PRAGMA wal_autocheckpoint = ${CHECKPOINT_BACKSTOP_PAGES}`, (err) => {
      if (err) this.#log.warn({ err }, 'a new connection checkpoints at SQLite\'s own threshold');
    });
  };
  /** Something was written since the last look began. */
  #written = false;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #closed: Promise<void> | null = null;
  /** The log's index could not be read: checkpoints are left to SQLite. */
  #handedBack = false;
  #failing = false;
  /** Checkpoints run, looks that found the log under the threshold, and what the last checkpoint found: the log's pages, and how many are in the database file now. */
  readonly stats = { checkpoints: 0, looksUnder: 0, last: { log: 0, checkpointed: 0 } };

  private constructor(connection: sqlite3.Database, index: number, db: Knex, pool: Pool, log: CheckpointLog, retryAfterMs: number) {
    this.#connection = connection;
    this.#index = index;
    this.#db = db;
    this.#pool = pool;
    this.#log = log;
    this.#retryAfterMs = retryAfterMs;
    db.on('query', this.#onQuery);
    pool.on('release', this.#onRelease);
    pool.on('createSuccess', this.#onCreate);
    // What was written before it started (migrations) is looked at too.
    this.#written = true;
    this.#schedule(LOOK_AFTER_MS);
  }

  /** Opens the checkpointing connection on `dataDir`'s database, which `db` (its service connection) has opened in WAL mode. */
  static async start(db: Knex, dataDir: string, log: CheckpointLog, { retryAfterMs = RETRY_AFTER_MS }: { retryAfterMs?: number } = {}): Promise<BackgroundCheckpoints> {
    const pool = (db.client as { pool?: Pool }).pool;
    if (!pool) throw new Error('BackgroundCheckpoints: the database has no connection pool');
    const driver = createRequire(import.meta.url)('sqlite3') as typeof sqlite3;
    const file = sqliteFile(dataDir);
    const connection = await new Promise<sqlite3.Database>((resolve, reject) => {
      const opened: sqlite3.Database = new driver.Database(file, driver.OPEN_READWRITE, (err) => (err ? reject(err) : resolve(opened)));
    });
    let index: number | null = null;
    try {
      // It never writes; a checkpoint by another process meanwhile is not waited for. Reading
      // the schema opens the log's index (`-shm`), which this connection then keeps in place.
      await new Promise<void>((resolve, reject) =>
        connection.exec('PRAGMA busy_timeout = 0; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0; SELECT count(*) FROM sqlite_schema;', (err) => (err ? reject(err) : resolve())),
      );
      index = openSync(`${file}-shm`, 'r');
      await db.raw(`PRAGMA wal_autocheckpoint = ${CHECKPOINT_BACKSTOP_PAGES}`);
      return new BackgroundCheckpoints(connection, index, db, pool, log, retryAfterMs);
    } catch (error) {
      if (index !== null) closeSync(index);
      await new Promise<void>((resolve) => connection.close(() => resolve()));
      throw error;
    }
  }

  /** A look at the log `delay` ms from now, unless one is due or running (a write meanwhile schedules the next once it is done). */
  #schedule(delay: number): void {
    if (this.#timer || this.#running || this.#closed || this.#handedBack) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#written = false;
      this.#running = this.#look().then((again) => {
        this.#running = null;
        if (again !== null) this.#schedule(again);
        else if (this.#written) this.#schedule(LOOK_AFTER_MS);
      });
    }, delay);
    // A process with nothing else to do may exit: its last connection to close checkpoints.
    this.#timer.unref();
  }

  /** Looks at the log and checkpoints it if due: when to look again regardless of writes (ms), or null. */
  async #look(): Promise<number | null> {
    let pages: ReturnType<typeof uncopiedPages>;
    try {
      pages = uncopiedPages(this.#index, this.#header);
    } catch {
      pages = 'unknown';
    }
    // A header caught mid-write is looked at again shortly.
    if (pages === 'torn') return LOOK_AFTER_MS;
    if (pages === 'unknown') {
      // A SQLite whose log index this does not know: checkpoints are SQLite's own again.
      this.#log.warn({}, 'background checkpoints cannot read the log index: left to SQLite');
      await this.#handBack();
      return null;
    }
    if (pages < CHECKPOINT_AT_PAGES) {
      this.stats.looksUnder += 1;
      return null;
    }
    try {
      const row = await new Promise<{ busy: number; log: number; checkpointed: number } | undefined>((resolve, reject) =>
        this.#connection.get('PRAGMA wal_checkpoint(PASSIVE)', (err, found) => (err ? reject(err) : resolve(found as never))),
      );
      if (this.#failing) this.#log.info({}, 'background checkpoints run again');
      this.#failing = false;
      // Another process's checkpoint was running: this one's pages are left for the next look.
      if (!row || row.busy) return LOOK_AFTER_MS;
      this.stats.checkpoints += 1;
      this.stats.last = { log: row.log, checkpointed: row.checkpointed };
      return null;
    } catch (error) {
      // Tried again a while later (a full disk, say); the service's connection checkpoints at the backstop anyway.
      if (!this.#failing) this.#log.warn({ err: error }, 'background checkpoint failed');
      this.#failing = true;
      return this.#retryAfterMs;
    }
  }

  /** The service's connection checkpoints at SQLite's own threshold again. */
  async #handBack(): Promise<void> {
    this.#handedBack = true;
    await this.#db.raw(`PRAGMA wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT_PAGES}`).catch((error: unknown) => this.#log.warn({ err: error }, 'checkpoints not handed back to SQLite'));
  }

  /** Stops checkpointing (a checkpoint under way finishes first), hands checkpoints back to the service's connection and closes its own. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      if (this.#timer) clearTimeout(this.#timer);
      this.#db.off('query', this.#onQuery);
      this.#pool.removeListener('release', this.#onRelease);
      this.#pool.removeListener('createSuccess', this.#onCreate);
      await this.#running;
      if (!this.#handedBack) await this.#handBack();
      closeSync(this.#index);
      await new Promise<void>((resolve, reject) => this.#connection.close((err) => (err ? reject(err) : resolve())));
    })();
    return this.#closed;
  }
}

/** The part of Knex's connection pool (tarn) `BackgroundCheckpoints` listens to. */
interface Pool {
  on(event: 'release', listener: () => void): void;
  on(event: 'createSuccess', listener: (eventId: number, connection: sqlite3.Database) => void): void;
  removeListener(event: 'release', listener: () => void): void;
  removeListener(event: 'createSuccess', listener: (eventId: number, connection: sqlite3.Database) => void): void;
}
