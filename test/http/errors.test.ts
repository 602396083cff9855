import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../server/router.ts';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let http: Client;

beforeAll(async () => {
  server = await startServer();
  http = new Client(server.url);
});
afterAll(async () => {
  await server.close();
});

async function rowCounts() {
  const counts: Record<string, number> = {};
  for (const table of ['profiles', 'profile_emails', 'profile_usernames', 'groups', 'group_members', 'sessions', 'account_tokens']) {
    counts[table] = Number((await server.service.db(table).count({ n: '*' }))[0]?.n);
  }
  return counts;
}

describe('the Error body on every path', () => {
  it('malformed JSON is a 400, never a 500', async () => {
    const before = await rowCounts();
    const res = await http.request('POST', '/register', '{"email": "a@b.org",');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 400, name: 'BadRequestError', message: 'Malformed JSON body', details: { reqId: expect.any(String) } });
    expect(await rowCounts()).toEqual(before);
  });

  it('an unknown path is a 404 Error body, not an HTML page', async () => {
    for (const [method, path] of [['GET', '/nowhere'], ['POST', '/login/extra'], ['DELETE', '/profiles']] as const) {
      const res = await http.request(method, path);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/application\/json/);
      expect(res.body).toEqual({ status: 404, name: 'NotFoundError', message: `Route not found: ${method} ${path}`, details: { reqId: expect.any(String) } });
    }
  });

  it('unknown fields, missing fields and over-limit values are named, and nothing is written', async () => {
    const before = await rowCounts();
    const res = await http.post('/register', { token: 'dev-ok', password: 'Good-Password1', fullname: 'X'.repeat(301), role: 'superuser' });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([
      { status: 400, name: 'MissingRequiredError', message: 'The property email is required', details: { path: 'email' } },
      { status: 400, name: 'ValidationError', message: expect.stringContaining('fullname'), details: { path: 'fullname' } },
      { status: 400, name: 'AdditionalPropertiesError', message: 'The property role must NOT be present', details: { path: 'role' } },
    ]);
    expect(res.body).toMatchObject({ status: 400, name: 'MissingRequiredError', details: { path: 'email' } });
    expect(await rowCounts()).toEqual(before);
  });

  it('a single failure has no errors list', async () => {
    const res = await http.post('/login', { id: 'a'.repeat(255), password: 'x' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 400, name: 'ValidationError', message: expect.stringMatching(/^id: /), details: { path: 'id', reqId: expect.any(String) } });
  });

  it('query parameters are checked the same way', async () => {
    const res = await http.get('/tildeusername?first=Ada&nickname=Countess');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ name: 'AdditionalPropertiesError', details: { path: 'nickname' } });
  });

  it('an invalid bearer token is a 401 Error body', async () => {
    const res = await http.get('/profiles', { authorization: 'Bearer not-a-token' });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ status: 401, name: 'UnauthorizedError', message: 'Invalid session token. Please log in again.', details: { reqId: expect.any(String) } });
  });
});

describe('a tRPC client', () => {
  it('sees the same name, status and field path in the error data', async () => {
    const trpc = createTRPCClient<AppRouter>({ links: [httpLink({ url: `${server.url}/trpc` })] });
    const error = await trpc.accounts.register
      .mutate({ email: 'not-an-email', password: 'Good-Password1', fullname: 'A B' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCClientError);
    const data = (error as TRPCClientError<AppRouter>).data as { httpStatus: number; error: unknown };
    expect(data.httpStatus).toBe(400);
    expect(data.error).toEqual({ status: 400, name: 'ValidationError', message: 'email: Invalid email address', details: { path: 'email', reqId: expect.any(String) } });
  });

  it('gets 401 UnauthorizedError without a session', async () => {
    const trpc = createTRPCClient<AppRouter>({ links: [httpLink({ url: `${server.url}/trpc` })] });
    const error = (await trpc.accounts.profiles.query().catch((e: unknown) => e)) as TRPCClientError<AppRouter>;
    expect(error.data?.httpStatus).toBe(401);
    expect((error.data as { error: { name: string } }).error.name).toBe('UnauthorizedError');
  });

  it('calls the same procedure the REST path calls', async () => {
    const trpc = createTRPCClient<AppRouter>({ links: [httpLink({ url: `${server.url}/trpc` })] });
    const viaTrpc = await trpc.accounts.tildeUsername.query({ first: 'Grace', last: 'Hopper' });
    const viaRest = await http.get('/tildeusername?first=Grace&last=Hopper');
    expect(viaRest.body).toEqual(viaTrpc);
    expect(viaTrpc).toEqual({ username: '~Grace_Hopper1' });
  });
});

describe('operations', () => {
  it('GET /health answers the database state', async () => {
    const res = await http.get('/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok', database: 'ok' });
  });

  it('every response carries a request id, and honours a sane one from the caller', async () => {
    const fresh = await http.get('/health');
    expect(fresh.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const given = await http.get('/health', { 'x-request-id': 'trace-123' });
    expect(given.headers.get('x-request-id')).toBe('trace-123');
    const odd = await http.get('/health', { 'x-request-id': 'bad id\twith spaces' });
    expect(odd.headers.get('x-request-id')).not.toBe('bad id\twith spaces');
    expect(server.logs.some((line) => JSON.parse(line).req?.id === 'trace-123')).toBe(true);
  });

  it('sends security headers and no X-Powered-By', async () => {
    const res = await http.get('/health');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-security-policy')).toBeTruthy();
    expect(res.headers.get('x-powered-by')).toBeNull();
  });

  /** The headers helmet sends only where a browser shows a document. */
  const DOCUMENT_ONLY = ['cross-origin-opener-policy', 'origin-agent-cluster', 'x-dns-prefetch-control', 'x-download-options', 'x-permitted-cross-domain-policies', 'x-xss-protection'];

  it("an API answer carries OWASP's headers for APIs, a document helmet's for documents", async () => {
    // JSON through the direct dispatch and through the router, an OAuth endpoint, an unknown path's 404, a refusal before any route.
    const apiAnswers = [
      await http.get('/tildeusername?first=Ada&last=Lovelace'),
      await http.get('/profiles/~Nobody1'),
      await http.get('/oidc/jwks'),
      await http.get('/nowhere'),
      await http.request('POST', '/register', '{}', { 'x-http-method-override': 'DELETE' }),
    ];
    for (const res of apiAnswers) {
      expect(res.headers.get('content-security-policy')).toBe("default-src 'none';frame-ancestors 'none'");
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      // Not over plain http (RFC 6797 §7.2): this server's address is `http:`.
      expect(res.headers.get('strict-transport-security')).toBeNull();
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(res.headers.get('cross-origin-resource-policy')).toBe('same-origin');
      for (const name of DOCUMENT_ONLY) expect(res.headers.get(name), name).toBeNull();
    }
    // A page, the reference page and a download's answer (here its 404) are documents.
    for (const path of ['/oidc/pages.css', '/oidc/login', '/docs', '/pdf?id=nothing']) {
      const res = await http.get(path);
      for (const name of DOCUMENT_ONLY) expect(res.headers.get(name), `${path}: ${name}`).not.toBeNull();
      expect(res.headers.get('x-frame-options'), path).toBe('SAMEORIGIN');
      expect(res.headers.get('content-security-policy'), path).not.toBe("default-src 'none';frame-ancestors 'none'");
      expect(res.headers.get('x-content-type-options'), path).toBe('nosniff');
      expect(res.headers.get('strict-transport-security'), path).toBeNull();
    }
  });

  it('asks browsers for https only when the public address is https (a proxy ends TLS)', async () => {
    const behindTls = await startServer({ BASE_URL: 'https://review.example.org' });
    try {
      const client = new Client(behindTls.url);
      for (const path of ['/tildeusername?first=Ada&last=Lovelace', '/nowhere', '/oidc/login', '/docs']) {
        const res = await client.get(path);
        expect(res.headers.get('strict-transport-security'), path).toMatch(/^max-age=\d+; includeSubDomains$/);
      }
      expect((await client.get('/docs')).headers.get('content-security-policy')).toMatch(/upgrade-insecure-requests/);
    } finally {
      await behindTls.close();
    }
  });

  it('hashes no ETag from an answer no cache keeps: an API answer (no-store), an error, the health check', async () => {
    const answer = await http.get('/tildeusername?first=Ada&last=Lovelace');
    expect(answer.status).toBe(200);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(answer.headers.get('etag')).toBeNull();
    const missing = await http.get('/no/such/path');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('etag')).toBeNull();
    expect((await http.get('/health')).headers.get('etag')).toBeNull();
  });
});
