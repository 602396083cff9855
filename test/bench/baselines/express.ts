/**
 * Rows 1, 3 and 9's baseline: a bare Express app whose one handler calls the same service
 * function as `GET /tildeusername` (`SignUpService.nextUsername`) on the same database, and
 * nothing else: no logging, no security headers, no cookies, no input or output schema.
 *
 * Usage: node test/bench/baselines/express.ts <data folder>
 */
import { createServer } from 'node:http';
import express from 'express';
import { openDatabase } from '../../../db/knex.ts';
import type { NameInput } from '../../../server/accounts/tilde.ts';
import { loadConfig } from '../../../server/config.ts';
import { createLogger } from '../../../server/logger.ts';
import { createServices } from '../../../server/services.ts';
import { benchDatabaseEnv } from '../setup.ts';
import { listen } from './listen.ts';

const dataDir = process.argv[2] ?? '';
const config = loadConfig({ ...benchDatabaseEnv(), DATA_DIR: dataDir });
const services = await createServices(config, openDatabase(config), createLogger('silent'));

const app = express();
app.get('/tildeusername', async (req, res) => {
  res.json({ username: await services.signUp.nextUsername(req.query as NameInput) });
});
listen(createServer(app));
