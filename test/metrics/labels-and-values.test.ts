import type { Request } from 'express';
import { describe, expect, it } from 'vitest';
import { routes } from '../../server/http/routes.ts';
import { routeTemplate } from '../../server/metrics/http.ts';
import { spelledAsTheFormat } from '../../server/metrics/registry.ts';
import { startMetricsServer } from '../../server/metrics/server.ts';
import { startServer } from '../helpers/server.ts';

describe('the route label of a request', () => {
  const templateOf = routeTemplate(routes);
  /** A request as Express leaves it once answered: no route, `baseUrl` put back. */
  const answered = (originalUrl: string) => ({ originalUrl, baseUrl: '' }) as unknown as Request;

  it('is /trpc for every path under it, refused or not, and unmatched for a path no route has', () => {
    expect(templateOf(answered('/trpc/accounts.me'))).toBe('/trpc');
    expect(templateOf(answered('/TRPC/x?batch=1'))).toBe('/trpc');
    expect(templateOf(answered('/trpc'))).toBe('/trpc');
    expect(templateOf(answered('/trpcx'))).toBe('unmatched');
    expect(templateOf(answered('/no/such/path'))).toBe('unmatched');
    expect(templateOf(answered('/health'))).toBe('/health');
  });

  it('counts a tRPC path asked with a method it does not have under /trpc', async () => {
    const server = await startServer({ METRICS_PORT: '0' });
    const listener = await startMetricsServer(server.service, server.config);
    try {
      for (const method of ['DELETE', 'OPTIONS']) expect((await fetch(`${server.url}/trpc/accounts.me`, { method })).status).toBe(404);
      const scrape = await (await fetch(listener?.url ?? '')).text();
      for (const method of ['DELETE', 'OPTIONS']) expect(scrape).toMatch(new RegExp(`peer_review_http_request_duration_seconds_count\\{route="/trpc",method="${method}",status="404"\\} 1`));
      expect(scrape).not.toMatch(/route="unmatched",method="(DELETE|OPTIONS)"/);
    } finally {
      await listener?.close();
      await server.close();
    }
  });
});

describe('the scrape\'s text', () => {
  it('writes a value that is not a number NaN, as the text format spells it, where prom-client writes Nan', () => {
    expect(spelledAsTheFormat('# TYPE a gauge\na Nan\nb{l="Nan"} 1\nc 2')).toBe('# TYPE a gauge\na NaN\nb{l="Nan"} 1\nc 2');
  });
});
