import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Knex } from 'knex';
import type pg from 'pg';

/**
 * The driver, loaded when a PostgreSQL connection is first made (Knex requires it then too): a
 * process on SQLite never loads it.
 */
let driver: typeof pg | undefined;
const pgDriver = (): typeof pg => (driver ??= createRequire(import.meta.url)('pg') as typeof pg);

/**
 * PostgreSQL, for installs that run several server processes on one database
 * (`DATABASE_URL=postgres://user:password@host:5432/name`).
 *
 * POSTGRES-ONLY: this file and `sqlite.ts` are the only places that know which database runs.
 */
export function postgresConfig(url: string): Knex.Config {
  return {
    client: 'pg',
    connection: { connectionString: url, types: NUMBERS_AS_NUMBERS, application_name: 'peer-review-accounts' },
    pool: {
      min: 0,
      // Each process's share of PostgreSQL's `max_connections` (100 by default): ten processes
      // fit with room for the operator's own sessions.
      max: 8,
      // A lock or statement that runs this long is a fault, answered as "busy" (503), not a wait
      // that holds the connection forever.
      afterCreate(conn: pg.Client, done: (err: Error | null, conn: pg.Client) => void) {
        conn.query(`SET lock_timeout = '${LOCK_TIMEOUT}'; SET statement_timeout = '60s'; SET idle_in_transaction_session_timeout = '60s'`, (err) => done(err, conn));
      },
    },
  };
}

/**
 * `bigint` (counts, milliseconds since 1970) and `numeric` come back from PostgreSQL as strings,
 * so that no value loses precision. Ours are all far below 2^53: read as numbers, as SQLite gives them.
 */
const NUMBERS_AS_NUMBERS = {
  getTypeParser(oid: number, format?: string) {
    const { types } = pgDriver();
    if (oid === types.builtins.INT8 || oid === types.builtins.NUMERIC) return (value: string) => Number(value);
    return types.getTypeParser(oid, format as 'text');
  },
};

export function isPostgres(db: Knex): boolean {
  return db.client.config.client === 'pg';
}

/** How long a statement waits for a row's or a table's lock before it is a 503 (`55P03`). */
export const LOCK_TIMEOUT = '5s';
/** How often a transaction is tried when concurrent ones keep conflicting with it. */
const SERIALIZATION_ATTEMPTS = 12;

/**
 * SQLSTATEs meaning "a concurrent transaction conflicted; nothing was written; run it again":
 * serialization failure, and deadlock (two transactions locking rows in opposite orders).
 */
const RETRYABLE = new Set(['40001', '40P01']);

export function isRetryable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && RETRYABLE.has(code);
}

type TransactionFn = (container?: unknown, config?: Knex.TransactionConfig) => Promise<unknown>;

/**
 * Makes `db.transaction(work)` SERIALIZABLE and runs it again when it conflicted (see
 * `openDatabase`). A wait with jitter between tries lets the winner commit first; after
 * `SERIALIZATION_ATTEMPTS` the conflict is reported (as "busy", 503). A transaction asked for at
 * another isolation level (`exclusively` takes read committed) is not retried; one opened
 * without a function (a transaction object to use by hand) is not either, as it cannot be re-run.
 */
export function retryingSerializable(db: Knex): void {
  // Knex's instance forwards `transaction` to its (untyped) context object: replaced there.
  const context = (db as unknown as { context: { transaction: TransactionFn } }).context;
  const begin = context.transaction.bind(context);
  context.transaction = async (container, config) => {
    if (typeof container !== 'function' || config?.isolationLevel) return begin(container, config);
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await begin(container, { ...config, isolationLevel: 'serializable' });
      } catch (error) {
        if (!isRetryable(error) || attempt >= SERIALIZATION_ATTEMPTS) throw error;
        const ms = Math.random() * Math.min(100, 2 ** attempt);
        await new Promise((resolve) => setTimeout(resolve, ms));
      }
    }
  };
}

/** The 64-bit advisory lock key of a name (PostgreSQL's advisory locks are numbered). */
export function advisoryKey(name: string): string {
  return createHash('sha256').update(`peer-review-accounts:${name}`).digest().readBigInt64BE(0).toString();
}
