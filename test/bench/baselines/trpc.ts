/**
 * Row 2's baseline: a bare tRPC router with the same procedure as `accounts.tildeUsername`
 * (the same input and output schemas, the same service call), on the same database, served by
 * the same Express adapter our server uses, so the row measures what our stack adds around
 * tRPC (middleware, context, our procedure middlewares), not the choice of adapter.
 *
 * It calls `initTRPC` itself, which the application does only in `server/trpc.ts`: being
 * independent of that file is the point of a baseline.
 *
 * Usage: node test/bench/baselines/trpc.ts <data folder>
 */
import { createServer } from 'node:http';
import { initTRPC } from '@trpc/server';
import { createExpressMiddleware } from '@trpc/server/adapters/express';
import express from 'express';
import { openDatabase } from '../../../db/knex.ts';
import { loadConfig } from '../../../server/config.ts';
import { createLogger } from '../../../server/logger.ts';
import { createServices } from '../../../server/services.ts';
import { TildeUsernameQuery, TildeUsernameResult } from '../../../shared/index.ts';
import { benchDatabaseEnv } from '../setup.ts';
import { listen } from './listen.ts';

const dataDir = process.argv[2] ?? '';
const config = loadConfig({ ...benchDatabaseEnv(), DATA_DIR: dataDir });
const services = await createServices(config, openDatabase(config), createLogger('silent'));

const t = initTRPC.create();
const router = t.router({
  accounts: t.router({
    tildeUsername: t.procedure
      .input(TildeUsernameQuery)
      .output(TildeUsernameResult)
      .query(async ({ input }) => ({ username: await services.signUp.nextUsername(input) })),
  }),
});

const app = express();
app.use('/trpc', createExpressMiddleware({ router }));
listen(createServer(app));
