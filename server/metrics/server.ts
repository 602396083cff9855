import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { AppMetrics } from './registry.ts';

/** The metrics listener, once it listens. */
export interface MetricsServer {
  /** Where it answers, e.g. `http://127.0.0.1:9464/metrics`. */
  url: string;
  server: Server;
  close(): Promise<void>;
}

/**
 * The metrics listener: `GET /metrics` in Prometheus' text format, on `METRICS_HOST:METRICS_PORT`
 * (127.0.0.1 by default). A server of its own, never a route of the public app, so a proxy in
 * front of the service cannot publish it by accident; it answers nothing else. Null when
 * `METRICS_PORT` is unset (the app then has no metrics: `App.metrics` is null).
 */
export async function startMetricsServer(app: { metrics: AppMetrics | null; logger: Logger }, config: Pick<Config, 'metricsPort' | 'metricsHost'>): Promise<MetricsServer | null> {
  const metrics = app.metrics;
  if (config.metricsPort === undefined || !metrics) return null;
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found: the metrics are at /metrics\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('Method not allowed\n');
      return;
    }
    metrics.scrape().then(
      ({ contentType, text }) => res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' }).end(text),
      (error: unknown) => {
        app.logger.error({ err: error }, 'metrics: the scrape failed');
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('The metrics could not be gathered\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.metricsPort, config.metricsHost, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}/metrics`;
  app.logger.info({ address: url }, 'metrics listening');
  return {
    url,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
