import path from 'node:path';
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { AppError } from '../../shared/errors.ts';
import { HealthResult, LivenessResult, ReadinessDetails, ReadinessResult } from '../../shared/index.ts';
import type { Db } from '../../db/knex.ts';
import { sqliteFileOf } from '../../db/sqlite.ts';
import { checkRoom } from '../free-space.ts';
import type { FileStore } from '../attachments/store/file-store.ts';
import type { Mailer } from '../mail/mailer.ts';
import { sendError } from './send-error.ts';

/**
 * Whether the database takes a write: one made and rolled back (SQLite then writes nothing to
 * disk). A database that can be read but not written does not, nor a SQLite file on a disk
 * without room (`checkRoom`), which fails every commit while this probe, rolled back, passes.
 */
async function takesWrite(db: Db): Promise<void> {
  const file = sqliteFileOf(db);
  if (file !== null) await checkRoom(path.dirname(file));
  const probe = new Error('health probe: rolled back');
  await db
    .transaction(async (trx) => {
      await trx('rate_limits').insert({ key: 'health:probe', points: 0, expire: 0 }).onConflict('key').merge();
      throw probe;
    })
    .catch((error: unknown) => {
      if (error !== probe) throw error;
    });
}

/** How long a check's answer is given to the probes that follow it. */
export const CHECK_KEPT_MS = 1000;

/**
 * `work` run once for the calls that come while it runs, and its outcome given to those within
 * `CHECK_KEPT_MS` after: the health routes are public and each check writes on the database's one
 * connection, so a flood of probes costs one check a second, not one per request.
 */
function sharedCheck<T>(work: () => Promise<T>): () => Promise<T> {
  let current: { answer: Promise<T>; settledAt: number | null } | undefined;
  return () => {
    if (current && (current.settledAt === null || Date.now() - current.settledAt < CHECK_KEPT_MS)) return current.answer;
    const run: { answer: Promise<T>; settledAt: number | null } = { answer: work(), settledAt: null };
    const settle = () => {
      run.settledAt = Date.now();
    };
    run.answer.then(settle, settle);
    current = run;
    return run.answer;
  };
}

/** Mail unsent for longer than this is a backlog `/health` reports: mail normally goes out within a second. */
export const MAIL_DELAYED_SECONDS = 300;

/**
 * The `health` route. Healthy means the database takes a write (`takesWrite`). A database that
 * can be read but not written is not healthy. Mail waiting longer than `MAIL_DELAYED_SECONDS` is
 * reported beside (`mail`): the service still answers, so it stays healthy.
 */
export function healthHandler(db: Db, mail: Pick<Mailer, 'backlog'>): RequestHandler {
  // Within the readiness checks' time: a write that hangs (a connection never given) fails the
  // probes of that second rather than holding every later one.
  const checked = sharedCheck(async () => {
    await withDeadline(takesWrite(db), READINESS_CHECK_MS);
    return mail.backlog();
  });
  return async (_req, res) => {
    try {
      const backlog = await checked();
      const delayed = backlog.oldestPendingSeconds > MAIL_DELAYED_SECONDS;
      res.json(HealthResult.parse({ status: 'ok', database: 'ok', ...(delayed ? { mail: { status: 'delayed', oldestPendingSeconds: backlog.oldestPendingSeconds } } : {}) }));
    } catch (error) {
      res.req.log.error({ err: error }, 'health check: database unavailable');
      sendError(res, new AppError('ServiceUnavailableError', 'The database is not available', { database: 'unavailable' }));
    }
  };
}

/** How long each readiness check may take before it counts as failed (a probe's own timeout is often a second or a few). */
export const READINESS_CHECK_MS = 3000;

/** Migrations not run yet (another process of a newer version may run them; this one did at start). */
class MigrationsPending extends Error {}

/** Every migration this version knows has run on the database. */
async function migrationsDone(db: Db): Promise<void> {
  const [, pending] = (await db.migrate.list()) as [unknown[], unknown[]];
  if (pending.length > 0) throw new MigrationsPending(`${pending.length} migration(s) not run`);
}

/** `work`, or a failure once `ms` have passed without its answer. */
async function withDeadline(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The orchestrators' probes. `health/live`: the process answers, whatever its dependencies (a
 * liveness probe that failed with the database would restart every replica during a database
 * outage). `health/ready`: the instance can serve: every migration has run, the database takes a
 * write, and the file store is reachable (`FileStore.check`), each with room on its disk where it
 * is a local folder; otherwise a 503 Error body whose details give each check's state, and each
 * failure is logged. The checks run together, each within `READINESS_CHECK_MS`, and their outcome
 * serves the probes of the next second too (`sharedCheck`).
 */
export function probeHandlers(db: Db, files: Pick<FileStore, 'check'>): { healthLive: RequestHandler; healthReady: RequestHandler } {
  // The checks run for the probe that starts them, and are logged with its request; the probes
  // within a second share them.
  let log: Pick<Logger, 'warn'> | undefined;
  const check = async <S extends string>(runLog: typeof log, name: keyof ReadinessDetails, work: () => Promise<void>, failed: (error: unknown) => S): Promise<'ok' | S> => {
    try {
      await withDeadline(work(), READINESS_CHECK_MS);
      return 'ok';
    } catch (error) {
      runLog?.warn({ err: error, check: name }, 'readiness check failed');
      return failed(error);
    }
  };
  const checked = sharedCheck(() => {
    const runLog = log;
    return Promise.all([
      check(runLog, 'migrations', () => migrationsDone(db), (error) => (error instanceof MigrationsPending ? 'pending' : 'unavailable')),
      check(runLog, 'database', () => takesWrite(db), () => 'unavailable' as const),
      check(runLog, 'files', () => files.check(), () => 'unavailable' as const),
    ]);
  });
  const readiness = (requestLog: Pick<Logger, 'warn'>) => {
    log = requestLog;
    return checked();
  };
  const live = LivenessResult.parse({ status: 'ok' });
  const ready = ReadinessResult.parse({ status: 'ok', migrations: 'ok', database: 'ok', files: 'ok' });
  return {
    healthLive: (_req, res) => {
      res.setHeader('Cache-Control', 'no-store');
      res.json(live);
    },
    healthReady: async (req, res) => {
      const [migrations, database, store] = await readiness(req.log);
      res.setHeader('Cache-Control', 'no-store');
      if (migrations === 'ok' && database === 'ok' && store === 'ok') {
        res.json(ready);
        return;
      }
      const details = ReadinessDetails.parse({ migrations, database, files: store });
      const failing = [
        ...(migrations === 'ok' ? [] : [migrations === 'pending' ? 'migrations have not all run' : 'the migrations cannot be read']),
        ...(database === 'ok' ? [] : ['the database does not take a write']),
        ...(store === 'ok' ? [] : ['the file store is not reachable']),
      ];
      sendError(res, new AppError('ServiceUnavailableError', `Not ready: ${failing.join('; ')}`, details));
    },
  };
}
