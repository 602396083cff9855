import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import knex, { type Knex } from 'knex';
import type { RateLimiterAbstract, RateLimiterPostgres as PostgresLimiter, RateLimiterRes as LimiterAnswer } from 'rate-limiter-flexible';
import { migrations } from './migrations/index.ts';
import { advisoryKey, isPostgres, LOCK_TIMEOUT, postgresConfig, retryingSerializable } from './postgres.ts';
import { readsOnly } from './queries.ts';
import { BackgroundCheckpoints, sqliteConfig } from './sqlite.ts';

export type Db = Knex;

/** Where the data lives: a PostgreSQL database when `databaseUrl` is set, else SQLite in `dataDir`. */
export interface DatabaseLocation {
  dataDir: string;
  databaseUrl?: string | undefined;
}

/**
 * Opens the database. SQLite is the embedded default: a file at `$DATA_DIR/service.sqlite`, one
 * connection, transactions that take the write lock when they begin. `DATABASE_URL=postgres://…`
 * chooses PostgreSQL: a pool of connections, shared by as many server processes as an install
 * runs. Repositories use Knex's portable builders and see the same values from both (numbers for
 * counts and bigints, text without length limits).
 *
 * On PostgreSQL every `db.transaction(work)` is SERIALIZABLE and is run again, from the start,
 * when PostgreSQL reports that it conflicted with a concurrent one (two notes numbered at once,
 * two sign-ups choosing the same tilde id, two moderators changing one profile). So a
 * transaction's work sees the database as if it ran alone, as on SQLite, where transactions run
 * one at a time. Work passed to `transaction` must therefore only touch the database: anything
 * else (mail, files) happens after it commits.
 */
export function openDatabase(where: DatabaseLocation): Db {
  // The data folder, on PostgreSQL too (files, the outbox, marks), is its owner's alone, as
  // `sqliteConfig` makes it.
  mkdirSync(where.dataDir, { recursive: true, mode: 0o700 });
  if (where.databaseUrl) {
    const db = knex({ ...postgresConfig(where.databaseUrl), compileSqlOnError: false, migrations: { migrationSource }, log: KNEX_LOG });
    retryingSerializable(db);
    return db;
  }
  // Knex would write the query's values into an error's message; they may be secrets (hashes,
  // emails), and messages are logged.
  return knex({ ...sqliteConfig(where.dataDir), compileSqlOnError: false, migrations: { migrationSource }, log: KNEX_LOG });
}

/**
 * Knex's own warnings (a connection it could not make, a deprecation): one line on stderr, the
 * message without its stack. Knex writes them to stdout by default, which carries the server's
 * JSON log and an admin command's output; the error itself reaches whoever awaited the query.
 */
const KNEX_LOG = (() => {
  const say = (message: unknown) => {
    const text = message instanceof Error ? `${message.name}: ${message.message}` : String(message);
    process.stderr.write(`knex: ${text.split('\n', 1)[0]}\n`);
  };
  return { warn: say, error: say, deprecate: say, debug: () => undefined };
})();

/**
 * On SQLite, starts copying the write-ahead log of `db` into the database file from a connection
 * of its own (`BackgroundCheckpoints`, the server's); on PostgreSQL there is nothing to do.
 */
export async function checkpointInBackground(
  db: Db,
  where: DatabaseLocation,
  log: Parameters<typeof BackgroundCheckpoints.start>[2],
  options?: Parameters<typeof BackgroundCheckpoints.start>[3],
): Promise<BackgroundCheckpoints | null> {
  if (where.databaseUrl) return null;
  // Not a reason to refuse to start: the service's connection then checkpoints as SQLite does by itself.
  return BackgroundCheckpoints.start(db, where.dataDir, log, options).catch((error: unknown) => {
    log.warn({ err: error }, 'background checkpoints not started');
    return null;
  });
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
 * Runs `work` in a transaction that holds the install-wide lock `name`, so that whatever runs it
 * (the processes of one install, on one machine or many, and the admin command) runs it one at a
 * time. On SQLite the transaction's write lock is that lock already; on PostgreSQL it is an
 * advisory lock held until the transaction ends, and the transaction reads what committed before
 * it got the lock (read committed), so the second to run sees the first one's work.
 */
export async function exclusively<T>(db: Db, name: string, work: (trx: Knex.Transaction) => Promise<T>, opts: { unbounded?: boolean } = {}): Promise<T> {
  if (!isPostgres(db)) return db.transaction(work);
  return db.transaction(
    async (trx) => {
      // `unbounded`: neither the wait for this lock nor a statement of the work is cut short by the
      // connection's timeouts (`db/postgres.ts`: 5 s for a lock, 60 s a statement), for work that
      // may take minutes on a large install, such as a migration another process is running. The
      // work's own locks keep their 5 s: a schema change waiting behind a long transaction would
      // otherwise hold every later reader of its table for as long.
      if (opts.unbounded) await trx.raw('set local lock_timeout = 0; set local statement_timeout = 0');
      await trx.raw('select pg_advisory_xact_lock(?::bigint)', [advisoryKey(name)]);
      if (opts.unbounded) await trx.raw(`set local lock_timeout = '${LOCK_TIMEOUT}'`);
      return work(trx);
    },
    { isolationLevel: 'read committed' },
  );
}

/**
 * Runs the pending migrations, all in one transaction, bookkeeping included: Knex's own
 * creation of its tables and its lock row happens outside its transactions, so two processes
 * starting on a new database (servers started together, the admin command) could both create
 * them and fail, or leave two lock rows that lock migrations for good. Under one exclusive
 * transaction they take turns (both databases run schema changes inside transactions); a
 * process killed half-way leaves nothing behind.
 */
export async function migrateToLatest(db: Db): Promise<void> {
  await exclusively(
    db,
    'migrations',
    async (trx) => {
      await renameMigrations(trx);
      await trx.migrate.latest();
    },
    // A migration of a large install may take minutes, and processes started with it wait for it.
    { unbounded: true },
  );
}

/** Migrations renamed after a version was out (the one before the arrow), as that version recorded them. */
const RENAMED_MIGRATIONS: ReadonlyArray<[string, string]> = [['20261123000000_note_deletion', '20261123020000_note_deletion']];

/** A recorded migration's name as this version names it. */
export function migrationNameNow(recorded: string): string {
  return RENAMED_MIGRATIONS.find(([before]) => before === recorded)?.[1] ?? recorded;
}

/** An install that recorded a migration under an earlier name has it recorded under its name now (Knex refuses names it does not know). */
async function renameMigrations(trx: Knex.Transaction): Promise<void> {
  if (!(await trx.schema.hasTable('knex_migrations'))) return;
  for (const [before, now] of RENAMED_MIGRATIONS) await trx('knex_migrations').where({ name: before }).update({ name: now });
}

/**
 * Whether a statement was refused for a row it would write: a constraint (SQLite's
 * `SQLITE_CONSTRAINT`; PostgreSQL's class 23, integrity) or a value the column cannot hold
 * (PostgreSQL's class 22). Such an error is the row's, not the database's: the same statement
 * without that row would have run.
 */
export function refusedForARow(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_CONSTRAINT') || /^2[23][0-9A-Z]{3}$/.test(code));
}

/** The rows of a `db.raw` statement's answer: SQLite's driver answers the rows, PostgreSQL's a result holding them. */
export function rawRows<T = unknown>(answer: unknown): T[] {
  return (Array.isArray(answer) ? answer : ((answer as { rows?: T[] }).rows ?? [])) as T[];
}

/** Where the rate limiters keep their counters, and how to let go of it. */
export interface RateLimiterStore {
  limiter(rule: { keyPrefix: string; points: number; duration: number }): RateLimiterAbstract;
  close(): Promise<void>;
}

/**
 * Rate limiters whose counters live in the `rate_limits` table (created by a migration), so every
 * process on the database shares them. On PostgreSQL, rate-limiter-flexible's own PostgreSQL
 * store (one upsert per count, on the pool; expired counters are deleted by the sweeper). On
 * SQLite, the same table layout through `TableRateLimiter`, on the service's own connection: each
 * count is one statement, so it needs no transaction, and the process has one writer: a flood of
 * counted requests queues behind other writes instead of racing them for SQLite's lock from a
 * second connection. Never count a try inside a transaction: the one connection would wait for itself.
 */
export function openRateLimiterStore(db: Db): RateLimiterStore {
  const postgres = isPostgres(db);
  return {
    limiter: (rule) =>
      postgres
        ? new (libraryFile<typeof PostgresLimiter>('RateLimiterPostgres.js'))({ ...rule, storeClient: db, storeType: 'knex', tableName: 'rate_limits', tableCreated: true, clearExpiredByTimeout: false })
        : new TableRateLimiter(db, rule),
    close: async () => undefined,
  };
}

/** Deletes the counters whose window ended (the sweeper's work). */
export async function deleteExpiredRateLimits(db: Db, now: number): Promise<number> {
  return db('rate_limits').whereNotNull('expire').andWhere('expire', '<', now).delete();
}

/**
 * One class of rate-limiter-flexible, by its file: the package's index loads every store it has
 * (Redis, Mongo, Memcached, …; about 7 MB resident), of which we use two.
 */
const libraryFile = <T>(name: string): T => createRequire(import.meta.url)(`rate-limiter-flexible/lib/${name}`) as T;

/** The answer its stores give and throw (the same class, so `instanceof` holds). */
export const RateLimiterRes = libraryFile<typeof LimiterAnswer>('RateLimiterRes.js');
export type RateLimiterRes = LimiterAnswer;

const RateLimiterStoreAbstract = libraryFile<new (opts: {
  keyPrefix: string;
  points: number;
  duration: number;
}) => RateLimiterAbstract & { points: number }>('RateLimiterStoreAbstract.js');

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

/**
 * What a process-local cache of database answers asks before it keeps or uses an answer: has
 * this process written to the tables the answer was read from since it was read?
 */
export interface WriteWatch {
  /** Moves on whenever a write to a watched table is sent, and again when its connection goes back to the pool (after the commit). */
  generation(): number;
  /** False while a connection that wrote to a watched table has not gone back to the pool yet (its transaction may still be open). */
  settled(): boolean;
}

const watches = new WeakMap<Db, Map<string, WriteWatch>>();

/**
 * The table a plain INSERT, UPDATE or DELETE writes: the one after `insert into`, `update` or
 * `delete from` (quoted or not, with its schema or not). A statement that starts otherwise has none.
 */
const WRITTEN_TABLE = /^\s*(?<verb>insert(?:\s+or\s+\w+)?\s+into|update(?:\s+or\s+\w+)?|delete\s+from)\s+(?:[`"]?\w+[`"]?\.)?[`"]?(?<table>\w+)[`"]?/i;

/** A table's name as watches compare them: its word characters, in lower case. */
const tableWord = (name: string) => name.replace(/\W/g, '').toLowerCase();

/** What a statement writes, as `watchWrites` reads it: one table (and whether as a plain insert), or any table it names. */
type Written = { table: string; plainInsert: boolean } | 'any named';

/** Statements read by `writtenBy`, by their text (up to `WRITTEN_KEPT_LENGTH` characters); the oldest goes first past `WRITTEN_KEPT`. */
const writtenKept = new Map<string, Written>();
const WRITTEN_KEPT = 200;
const WRITTEN_KEPT_LENGTH = 8192;

/** How many statements' texts `writtenBy` keeps now (never more than `WRITTEN_KEPT`). */
export function writtenTextsKept(): number {
  return writtenKept.size;
}

/**
 * What `sql` writes. Read once per text and kept: every watch looks at every statement that is
 * not a plain read, most of them the same few texts, and reading a long one (the refresh's
 * rotation is 2 kB) took 1–2 % of a busy main thread when each watch read it again.
 */
function writtenBy(sql: string): Written {
  const kept = writtenKept.get(sql);
  if (kept !== undefined) return kept;
  // One statement (a `;` followed by more is a script).
  const target = /;\s*\S/.test(sql) ? undefined : WRITTEN_TABLE.exec(sql)?.groups;
  // A plain INSERT, UPDATE or DELETE writes its own table alone; the others it names are read.
  // Any other statement (a `WITH`, `REPLACE`, a script) may write any table it names.
  const written: Written = target
    ? { table: tableWord(target.table ?? ''), plainInsert: /^insert\s+into$/i.test(target.verb ?? '') && !/\bdo\s+update\b/i.test(sql) }
    : 'any named';
  if (sql.length > WRITTEN_KEPT_LENGTH) return written;
  writtenKept.set(sql, written);
  if (writtenKept.size > WRITTEN_KEPT) writtenKept.delete(writtenKept.keys().next().value as string);
  return written;
}

/**
 * Watches this process's writes to `tables` through `db` (every statement but a `select` that
 * names one of them, in a transaction or not; so a cache that keys its answers to `generation`
 * and keeps only what it read while `settled`, and with the generation unchanged from start to
 * end, never serves an answer that one of this process's writes has made stale, whatever the
 * connection, the transaction or the database). The writes of other processes are not seen:
 * such a cache must expire its answers by time as well. One watch per `db` and set of tables.
 * A plain INSERT, UPDATE or DELETE counts as a write to the table it writes alone (an insert that
 * selects from a watched table reads it); any other statement, to every table it names.
 * `insertsIgnored`: tables whose plain inserts (not upserts) cannot make a kept answer stale
 * (a new access token changes no answer about the others), so a sign-in does not drop them.
 */
export function watchWrites(db: Db, tables: readonly string[], opts: { insertsIgnored?: readonly string[] } = {}): WriteWatch {
  const ignored = opts.insertsIgnored ?? [];
  const key = `${[...tables].sort().join(',')} ${[...ignored].sort().join(',')}`;
  let byTables = watches.get(db);
  if (!byTables) watches.set(db, (byTables = new Map()));
  const known = byTables.get(key);
  if (known) return known;

  const watched = new Set(tables.map(tableWord));
  const insertsIgnored = new Set(ignored.map(tableWord));
  const names = new RegExp(`(^|[^\\w])(${[...watched].join('|')})($|[^\\w])`, 'i');
  let generation = 0;
  /** The connections (by Knex's id) that wrote to a watched table and have not been released since. */
  const writers = new Set<string>();
  db.on('query', (query: { sql?: unknown; method?: unknown; __knexUid?: unknown }) => {
    if (readsOnly(query)) return;
    const sql = typeof query.sql === 'string' ? query.sql : '';
    const written = writtenBy(sql);
    if (written !== 'any named') {
      if (!watched.has(written.table)) return;
      if (written.plainInsert && insertsIgnored.has(written.table)) return;
    } else if (!names.test(sql)) {
      return;
    }
    generation += 1;
    writers.add(String(query.__knexUid));
  });
  type Connection = { __knexUid?: unknown } | undefined;
  const pool = (db.client as { pool?: { on(event: string, listener: (...args: Connection[]) => void): void } }).pool;
  if (!pool) throw new Error('watchWrites: the database has no connection pool');
  const done = (connection: Connection) => {
    if (writers.delete(String(connection?.__knexUid))) generation += 1;
  };
  pool.on('release', (connection) => done(connection));
  // A connection thrown away (a failed rollback) is not released.
  pool.on('destroySuccess', (_eventId, connection) => done(connection));
  const watch: WriteWatch = { generation: () => generation, settled: () => writers.size === 0 };
  byTables.set(key, watch);
  return watch;
}
