/**
 * The requests to literal paths are dispatched without Express's router (`directDispatch` in
 * mount.ts, issue 16; GETs first, the other methods and tRPC's GETs and POSTs since issue 30): the
 * same request to the same route with a trailing slash (under `/TRPC` for tRPC's) still goes
 * through the router. Both must answer alike: the same status, headers and body, and a log line.
 */
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Socket } from 'node:net';
import express, { type Request, type RequestHandler, type Response } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configureTimeouts, expressMessages } from '../../server/http/app.ts';
import { directDispatch } from '../../server/http/mount.ts';
import { routes } from '../../server/http/routes.ts';
import { cookieHeader } from '../helpers/cookies.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
let cookie: string;
beforeAll(async () => {
  server = await startServer();
  const user = await createActiveUser(server);
  const { client } = await loggedIn(server, user.email);
  cookie = cookieHeader(client);
});
afterAll(async () => {
  await server.close();
});

/** What may differ between two answers to the same request: the time and the request id (and an error body's ETag, as the body holds the id). */
const VARYING = new Set(['date', 'x-request-id']);

async function answer(path: string, headers: Record<string, string> = {}, init: { method?: string; body?: string } = {}) {
  const res = await fetch(`${server.url}${path}`, { ...init, headers, redirect: 'manual' });
  const body = await res.text();
  const id = res.headers.get('x-request-id');
  const kept = [...res.headers].filter(([name]) => !VARYING.has(name) && !(name === 'etag' && id && body.includes(id)));
  return { status: res.status, headers: Object.fromEntries(kept), body, id };
}

describe('a GET of a literal path', () => {
  it.each([
    ['/oidc/jwks', {}],
    ['/.well-known/openid-configuration', {}],
    ['/oidc/userinfo', {}],
    ['/oidc/userinfo', { authorization: 'Bearer not-a-token' }],
    ['/oidc/authorize?client_id=nobody&response_type=code', {}],
    ['/tildeusername?fullname=Ada%20Lovelace', {}],
    ['/tildeusername', {}],
    ['/profiles', { cookie: 'x' }],
    ['/health', {}],
  ] as Array<[string, Record<string, string>]>)('%s answers as it does through the router', async (path, headers) => {
    const [pathname, query] = path.split('?');
    const slashed = `${pathname}/${query ? `?${query}` : ''}`;
    const direct = await answer(path, headers);
    const routed = await answer(slashed, headers);
    expect(direct.status).toBe(routed.status);
    expect(direct.headers).toEqual(routed.headers);
    expect(direct.body.replaceAll(direct.id ?? '', '')).toBe(routed.body.replaceAll(routed.id ?? '', ''));
    // Each has its log line, with its own id and URL.
    await new Promise((resolve) => setTimeout(resolve, 20));
    for (const [id, url] of [
      [direct.id, path],
      [routed.id, slashed],
    ]) {
      const line = server.logs.map((l) => JSON.parse(l) as { req?: { id?: string; url?: string }; res?: { statusCode?: number }; msg?: string }).find((l) => l.req?.id === id);
      expect(line?.msg).toBe('request completed');
      expect(line?.res?.statusCode).toBe(direct.status);
      expect(line?.req?.url?.split('?')[0]).toBe(url?.split('?')[0]);
    }
  });

  it('with a signed-in session, answers as the router does', async () => {
    const direct = await answer('/profiles', { cookie });
    const routed = await answer('/profiles/', { cookie });
    expect(direct.status).toBe(200);
    expect(direct.status).toBe(routed.status);
    expect(direct.body.replaceAll(direct.id ?? '', '')).toBe(routed.body.replaceAll(routed.id ?? '', ''));
  });

  it('refuses method overrides and answers a matching If-None-Match with 304, as before', async () => {
    expect((await answer('/oidc/jwks', { 'x-http-method-override': 'DELETE' })).status).toBe(400);
    const first = await answer('/oidc/jwks');
    // As a browser revalidates (fetch would otherwise add `Cache-Control: no-cache`, which asks for the body).
    const again = await answer('/oidc/jwks', { 'if-none-match': first.headers.etag ?? '', 'cache-control': 'max-age=0' });
    expect(again.status).toBe(304);
  });
});

describe('a POST, PUT or DELETE of a literal path', () => {
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  const json = { 'content-type': 'application/json' };
  it.each([
    ['POST', '/oidc/token', form, 'grant_type=authorization_code&code=c1.nothing.here&client_id=nobody'],
    ['POST', '/oidc/token', form, 'grant_type=refresh_token'],
    ['POST', '/oidc/token', json, '{}'],
    ['POST', '/oidc/introspect', form, 'token=abc'],
    ['POST', '/refreshToken', {}, ''],
    ['POST', '/login', json, '{not json'],
    ['POST', '/user/confirm', json, '{}'],
    ['PUT', '/mfa/preferred', json, '{"method":"totp"}'],
    ['PUT', '/attachment', {}, ''],
    ['DELETE', '/notes', {}, ''],
  ] as Array<[string, string, Record<string, string>, string]>)('%s %s answers as it does through the router', async (method, path, headers, body) => {
    const direct = await answer(path, headers, { method, body });
    const routed = await answer(`${path}/`, headers, { method, body });
    expect(direct.status).toBe(routed.status);
    expect(direct.headers).toEqual(routed.headers);
    expect(direct.body.replaceAll(direct.id ?? '', '')).toBe(routed.body.replaceAll(routed.id ?? '', ''));
  });

  // With the session's cookies, the same-origin rule answers first; both ways refuse alike.
  it.each([
    ['POST', '/logout', { 'sec-fetch-site': 'cross-site', ...json }, '{}', 403],
    ['PUT', '/mfa/preferred', { origin: 'https://elsewhere.example', ...json }, '{"method":"totp"}', 403],
    ['POST', '/user/confirm', form, 'email=a%40example.com', 400],
  ] as Array<[string, string, Record<string, string>, string, number]>)('%s %s with cookies, from another site or as a form, is refused as through the router', async (method, path, headers, body, status) => {
    const direct = await answer(path, { ...headers, cookie }, { method, body });
    const routed = await answer(`${path}/`, { ...headers, cookie }, { method, body });
    expect(direct.status).toBe(status);
    expect(routed.status).toBe(status);
    expect(direct.body.replaceAll(direct.id ?? '', '')).toBe(routed.body.replaceAll(routed.id ?? '', ''));
  });
});

describe('a GET or POST under /trpc', () => {
  const json = { 'content-type': 'application/json' };
  const input = encodeURIComponent(JSON.stringify({ fullname: 'Ada Lovelace' }));
  it.each([
    ['GET', `/accounts.tildeUsername?input=${input}`, {}, undefined],
    ['GET', `/accounts.tildeUsername,accounts.tildeUsername?batch=1&input=${encodeURIComponent(JSON.stringify({ 0: { fullname: 'Ada Lovelace' }, 1: {} }))}`, {}, undefined],
    ['GET', '/accounts.tildeUsername', {}, undefined],
    ['GET', '/no.such.procedure', {}, undefined],
    ['GET', '', {}, undefined],
    ['GET', '/', {}, undefined],
    // Refused by the route's own middleware (`trpcGuard`): the error handler sees the whole URL again.
    ['GET', `/${Array(11).fill('accounts.tildeUsername').join(',')}?batch=1`, {}, undefined],
    ['POST', '/accounts.tildeUsername', json, '{}'],
    ['POST', '/accounts.logout', json, '{not json'],
  ] as Array<[string, string, Record<string, string>, string | undefined]>)('%s /trpc%s answers as it does through the router', async (method, rest, headers, body) => {
    // The router matches paths in any letter case; the direct dispatch takes `/trpc` alone.
    const direct = await answer(`/trpc${rest}`, headers, { method, ...(body === undefined ? {} : { body }) });
    const routed = await answer(`/TRPC${rest}`, headers, { method, ...(body === undefined ? {} : { body }) });
    expect(direct.status).toBe(routed.status);
    expect(direct.headers).toEqual(routed.headers);
    expect(direct.body.replaceAll(direct.id ?? '', '')).toBe(routed.body.replaceAll(routed.id ?? '', ''));
  });

  it('with a signed-in session, answers as the router does', async () => {
    const direct = await answer('/trpc/accounts.sessions', { cookie });
    const routed = await answer('/TRPC/accounts.sessions', { cookie });
    expect(direct.status).toBe(200);
    expect(direct.body.replaceAll(direct.id ?? '', '')).toBe(routed.body.replaceAll(routed.id ?? '', ''));
  });
});

describe("the server's request and response classes (`expressMessages`)", () => {
  it("inherit from the app's own once it answers, keeping Node's", () => {
    const app = express();
    const messages = expressMessages();
    messages.answeredBy(app);
    const req = new messages.options.IncomingMessage!(new Socket());
    const res = new messages.options.ServerResponse!(req);
    expect(Object.prototype.isPrototypeOf.call(app.request, req)).toBe(true);
    expect(Object.prototype.isPrototypeOf.call(app.response, res)).toBe(true);
    expect(req).toBeInstanceOf(IncomingMessage);
    expect(res).toBeInstanceOf(ServerResponse);
  });

  it('a server made without them (requests re-parented as they arrive) answers alike', async () => {
    const plain = createServer(server.service.app);
    configureTimeouts(plain, server.config);
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    const plainUrl = `http://127.0.0.1:${(plain.address() as AddressInfo).port}`;
    try {
      for (const [path, headers] of [
        ['/oidc/jwks', {}],
        ['/tildeusername?fullname=Ada%20Lovelace', {}],
        ['/profiles', { cookie }],
        ['/profiles/', { cookie }],
        ['/trpc/accounts.sessions', { cookie }],
        ['/no/such/path', {}],
      ] as Array<[string, Record<string, string>]>) {
        const ours = await answer(path, headers);
        const res = await fetch(`${plainUrl}${path}`, { headers, redirect: 'manual' });
        const body = await res.text();
        const id = res.headers.get('x-request-id');
        const kept = Object.fromEntries([...res.headers].filter(([name]) => !VARYING.has(name) && !(name === 'etag' && id && body.includes(id))));
        expect(res.status, path).toBe(ours.status);
        expect(kept, path).toEqual(ours.headers);
        expect(body.replaceAll(id ?? '', ''), path).toBe(ours.body.replaceAll(ours.id ?? '', ''));
      }
    } finally {
      plain.closeAllConnections();
      await new Promise<void>((resolve) => plain.close(() => resolve()));
    }
  });
});

describe('directDispatch', () => {
  it('takes exactly the requests to literal paths, by the methods the table has for them, that no route taking every method covers, and runs their stack in order', async () => {
    const app = express();
    const seen: string[] = [];
    const step =
      (name: string): RequestHandler =>
      (_req, _res, next) => {
        seen.push(name);
        next();
      };
    const direct = directDispatch(app, routes, {
      before: [step('before')],
      // Each route's own middleware, named by what its line asks for.
      middlewareOf: (needs) => [step(JSON.stringify(needs))],
      handlerOf: (route) => [(_req, res) => void res.end(`${route.method} ${route.path}`)],
      notFound: (_req, res) => void res.end('none'),
      onError: (_error, _req, res) => void res.end('error'),
    });
    const request = (method: string, url: string) => {
      const ended: string[] = [];
      const res = { setHeader: () => undefined, end: (body: string) => ended.push(body) } as unknown as Response;
      const taken = direct({ method, url, headers: {} } as unknown as Request, res);
      return { taken, ended };
    };
    const literal = routes.filter((r) => ['get', 'post', 'put', 'patch', 'delete'].includes(r.method) && !/[:*]/.test(r.path) && r.path !== '/trpc' && !r.path.startsWith('/trpc/'));
    expect(literal.filter((r) => r.method === 'post').length).toBeGreaterThan(10);
    for (const route of literal) {
      seen.length = 0;
      const { taken, ended } = request(route.method.toUpperCase(), `${route.path}?a=1`);
      expect(taken, `${route.method} ${route.path}`).toBe(true);
      expect(ended).toEqual([`${route.method} ${route.path}`]);
      expect(seen).toEqual(['before', JSON.stringify(route)]);
    }
    for (const [method, url] of [
      ['HEAD', '/oidc/jwks'],
      ['OPTIONS', '/oidc/token'],
      ['GET', '/oidc/token'],
      ['PATCH', '/oidc/token'],
      ['POST', '/oidc/jwks'],
      ['GET', '/oidc/jwks/'],
      ['GET', '/OIDC/jwks'],
      ['GET', '/pdf/abc'],
      ['HEAD', '/trpc/accounts.tildeUsername'],
      ['OPTIONS', '/trpc/accounts.tildeUsername'],
      ['PUT', '/trpc/accounts.tildeUsername'],
      ['GET', '/TRPC/accounts.tildeUsername'],
      ['GET', '/trpcs/accounts.tildeUsername'],
      ['GET', '/nowhere'],
    ] as const) {
      expect(request(method, url).taken, `${method} ${url}`).toBe(false);
    }
  });

  it('takes a GET or POST under /trpc through the app-wide middleware, then the route’s own with the prefix trimmed, as the router mounts it', () => {
    const app = express();
    const seen: Array<[string, string, string]> = [];
    const step =
      (name: string): RequestHandler =>
      (req, _res, next) => {
        seen.push([name, req.url, req.baseUrl]);
        next();
      };
    const direct = directDispatch(app, routes, {
      before: [step('before')],
      middlewareOf: () => [step('middleware')],
      handlerOf: (route) => [(req, res) => void res.end(`${route.path} ${req.url} ${req.originalUrl}`)],
      notFound: (_req, res) => void res.end('none'),
      onError: (_error, _req, res) => void res.end('error'),
    });
    for (const [method, url, trimmed] of [
      ['GET', '/trpc/accounts.tildeUsername?input=%7B%7D', '/accounts.tildeUsername?input=%7B%7D'],
      ['POST', '/trpc/a.b,c.d?batch=1', '/a.b,c.d?batch=1'],
      ['GET', '/trpc', '/'],
      ['GET', '/trpc?batch=1', '/?batch=1'],
    ] as const) {
      seen.length = 0;
      const ended: string[] = [];
      const res = { setHeader: () => undefined, end: (body: string) => ended.push(body) } as unknown as Response;
      expect(direct({ method, url, headers: {} } as unknown as Request, res)).toBe(true);
      expect(seen).toEqual([
        ['before', url, ''],
        ['middleware', trimmed, '/trpc'],
      ]);
      expect(ended).toEqual([`/trpc ${trimmed} ${url}`]);
    }
  });

  it('leaves /trpc to the router when another route could match a path under it', () => {
    const app = express();
    const handlers = { before: [], middlewareOf: () => [], handlerOf: () => [], notFound: () => undefined, onError: () => undefined };
    const request = (table: typeof routes) => directDispatch(app, table, handlers)({ method: 'GET', url: '/trpc/accounts.tildeUsername', headers: {} } as unknown as Request, {} as Response);
    expect(request(routes)).toBe(true);
    for (const path of ['/:anything/x', '/*rest', '/TRPC/other'])
      expect(request([...routes, { kind: 'page', method: 'get', path, handler: 'x' } as unknown as (typeof routes)[number]]), path).toBe(false);
  });

  it('lets a step report a failure through `req.next`, as Express’s own helpers do', () => {
    const app = express();
    const direct = directDispatch(app, routes, {
      before: [],
      middlewareOf: () => [],
      // As `res.sendFile` reports a file it cannot send, with no callback given.
      handlerOf: () => [(req) => void req.next?.(new Error('cannot send'))],
      notFound: (_req, res) => void res.end('none'),
      onError: (error, _req, res) => void res.end(`error: ${(error as Error).message}`),
    });
    for (const url of ['/oidc/jwks', '/trpc/accounts.tildeUsername']) {
      const ended: string[] = [];
      const res = { setHeader: () => undefined, end: (body: string) => ended.push(body) } as unknown as Response;
      expect(direct({ method: 'GET', url, headers: {} } as unknown as Request, res)).toBe(true);
      expect(ended, url).toEqual(['error: cannot send']);
    }
  });
});
