import type { RequestHandler } from 'express';
import { AppError } from '../../shared/errors.ts';
import { HealthResult } from '../../shared/index.ts';
import type { Db } from '../../db/knex.ts';
import { sendError } from './send-error.ts';

/**
 * The `health` route. Healthy means the database takes a write: one made and rolled back
 * (SQLite then writes nothing to disk). A database that can be read but not written is not healthy.
 */
export function healthHandler(db: Db): RequestHandler {
  return async (_req, res) => {
    try {
      const probe = new Error('health probe: rolled back');
      await db
        .transaction(async (trx) => {
          await trx('rate_limits').insert({ key: 'health:probe', points: 0, expire: 0 }).onConflict('key').merge();
          throw probe;
        })
        .catch((error: unknown) => {
          if (error !== probe) throw error;
        });
      res.json(HealthResult.parse({ status: 'ok', database: 'ok' }));
    } catch (error) {
      res.req.log.error({ err: error }, 'health check: database unavailable');
      sendError(res, new AppError('ServiceUnavailableError', 'The database is not available', { database: 'unavailable' }));
    }
  };
}
