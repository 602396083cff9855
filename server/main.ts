/**
 * `npm start`: migrates the database, then serves on `$HOST:$PORT` until SIGTERM or SIGINT,
 * when it stops accepting connections, lets requests in flight finish, and exits.
 */
import { createServer } from 'node:http';
import path from 'node:path';
import { loadConfigOrExit } from './config.ts';
import { answerClientErrors, configureTimeouts, createApp, expressMessages } from './http/app.ts';
import { createLogger } from './logger.ts';
import { settleAfterStart, settleWhenIdle } from './memory.ts';
import { startMetricsServer } from './metrics/server.ts';

const SHUTDOWN_GRACE_MS = 10_000;

const config = loadConfigOrExit(process.env);
const logger = createLogger(config.logLevel);
const service = await createApp(config, { logger });
// `GET /metrics` on a listener of its own (METRICS_PORT; none when unset), never the public one.
const metrics = await startMetricsServer(service, config);
if (metrics) console.log(`Metrics on ${metrics.url}`);
const messages = expressMessages();
messages.answeredBy(service.app);
const server = createServer(messages.options, service.app);
answerClientErrors(server);
configureTimeouts(server, config);

server.listen(config.port, config.host, () => {
  const address = server.address();
  const where = typeof address === 'object' && address ? `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}` : String(address);
  logger.info({ address: where, pages: config.webUrl, dataDir: config.dataDir, mail: config.smtpUrl ? 'smtp' : 'outbox' }, 'listening');
  // What a person who just ran `npm start` needs, on the terminal at once (the JSON log is
  // buffered): where to go, and where the mail is when it goes to the outbox.
  console.log(`Listening on ${where}`);
  console.log(`Open ${config.baseUrl}/ in a browser (the account pages: ${config.webUrl})`);
  if (!config.smtpUrl) console.log(`Mail is written to ${path.join(config.dataDir, 'outbox')}`);
  // Start-up's garbage given back before the first request is answered (with `--expose-gc`).
  settleAfterStart();
  // And a burst's garbage given back once the burst is over.
  settleWhenIdle(server);
});

let stopping = false;
function shutdown(signal: string): void {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'shutting down: finishing requests in flight');
  const force = setTimeout(() => {
    logger.warn('requests still running after the grace period; closing them');
    server.closeAllConnections();
  }, SHUTDOWN_GRACE_MS);
  force.unref();
  server.close(async () => {
    await metrics?.close();
    await service.close();
    logger.info('stopped');
    logger.flush(() => process.exit(0));
  });
  server.closeIdleConnections();
}

process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
