/**
 * The route table decides which route answers a request, not the order of its lines: mounted
 * as written or reversed, every path reaches the same entry.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type RequestHandler } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byPrecedence, mountRoutes } from '../../server/http/mount.ts';
import { procedureHandler } from '../../server/http/procedure.ts';
import { routes, type ProcedureRoute, type Route } from '../../server/http/routes.ts';

/** An app whose every route answers with its own method and path, mounted from `table`. */
async function stubApp(table: readonly Route[]): Promise<{ url: string; server: Server }> {
  const app = express();
  const answer =
    (route: Route): RequestHandler =>
    (_req, res) => {
      // In a header too: an answer to HEAD has no body.
      res.setHeader('X-Route', `${route.method} ${route.path}`);
      res.json(`${route.method} ${route.path}`);
    };
  mountRoutes(app, table, { middlewareOf: () => [], handlerOf: (route) => [answer(route)], notFound: (_req, res) => res.status(404).json('none') });
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** A concrete path for a route's template: `/venues/*venueId/config` → `/venues/Conf.org/2027/config`. */
const concrete = (path: string) => path.replace(/\*\w+/g, 'Conf.org/2027').replace(/:\w+/g, 'sample-1');

async function routedTo(url: string, method: string, path: string): Promise<unknown> {
  const res = await fetch(`${url}${path}`, { method: method === 'any' ? 'GET' : method.toUpperCase() });
  return method === 'head' ? (res.headers.get('x-route') ?? res.status) : res.json();
}

let forward: { url: string; server: Server };
let reversed: { url: string; server: Server };

beforeAll(async () => {
  forward = await stubApp(routes);
  reversed = await stubApp([...routes].reverse());
});
afterAll(() => {
  forward.server.close();
  reversed.server.close();
});

describe('the route table', () => {
  it('sends each route’s own path to that route, in the table’s order and in reverse', async () => {
    for (const route of routes) {
      const expected = route.method === 'any' ? 'any /trpc' : `${route.method} ${route.path}`;
      expect(await routedTo(forward.url, route.method, concrete(route.path)), `${route.method} ${route.path}`).toBe(expected);
      expect(await routedTo(reversed.url, route.method, concrete(route.path)), `${route.method} ${route.path} (reversed)`).toBe(expected);
    }
  });

  it('gives a literal path precedence over a parameter, whatever the order: /pdf/compare is never a stored PDF', async () => {
    for (const { url } of [forward, reversed]) {
      expect(await routedTo(url, 'get', '/pdf/compare')).toBe('get /pdf/compare');
      expect(await routedTo(url, 'get', '/PDF/Compare/')).toBe('get /pdf/compare');
      expect(await routedTo(url, 'get', '/pdf/compare/view')).toBe('get /pdf/compare/view');
      expect(await routedTo(url, 'get', '/pdf/a1b2c3.pdf')).toBe('get /pdf/:id');
      expect(await routedTo(url, 'post', '/pdf/compare')).toBe('none');
    }
  });

  it('is registered in the same order whatever the order of its lines', () => {
    expect(byPrecedence([...routes].reverse())).toEqual(byPrecedence(routes));
  });

  it('names only procedures the router has, as queries or mutations: a route naming another stops the start', () => {
    const procedureRoutes = routes.filter((route): route is ProcedureRoute => route.kind === 'procedure');
    expect(procedureRoutes.length).toBeGreaterThan(20);
    for (const route of procedureRoutes) expect(() => procedureHandler(route, {} as never, {} as never)).not.toThrow();
    const misnamed = { ...(procedureRoutes[0] as ProcedureRoute), procedure: 'accounts.noSuchProcedure' as ProcedureRoute['procedure'] };
    expect(() => procedureHandler(misnamed, {} as never, {} as never)).toThrow(/names no query or mutation: accounts.noSuchProcedure/);
    // The types already refuse both; this is for a route table built otherwise. A router is not a procedure.
    expect(() => procedureHandler({ ...misnamed, procedure: 'accounts' as ProcedureRoute['procedure'] }, {} as never, {} as never)).toThrow(/names no query or mutation/);
  });

  it('refuses a method and path listed twice', () => {
    const [first] = routes;
    expect(() => byPrecedence([...routes, { ...(first as Route) }])).toThrow(/twice/);
  });
});
