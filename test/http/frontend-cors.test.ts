/**
 * Credentialed CORS for the web application set as `WEB_URL` on another origin, and only for it
 * (`http/cors.ts` `frontendCors`); `COOKIE_DOMAIN` and the readable user cookie
 * (`http/context.ts`). The browser's side of it: `test/compat/web-client-browser.test.ts`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Response } from 'express';
import { loadConfig } from '../../server/config.ts';
import { tokenUser } from '../../server/accounts/session-tokens.ts';
import type { IssuedSession } from '../../server/accounts/viewer.ts';
import type { SimplifiedProfile } from '../../shared/index.ts';
import { httpCookies, USER_COOKIE_BYTES } from '../../server/http/context.ts';
import { cookiesOf } from '../helpers/cookies.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';

const WEB = 'https://review.example.org';
const ELSEWHERE = 'https://elsewhere.example.org';

describe('the configuration', () => {
  it('names the web application\'s origin only when it is not the service\'s own', () => {
    expect(loadConfig({ BASE_URL: 'https://api.example.org' }).frontendOrigin).toBeUndefined();
    expect(loadConfig({ BASE_URL: 'https://api.example.org', WEB_URL: 'https://api.example.org/pages' }).frontendOrigin).toBeUndefined();
    expect(loadConfig({ BASE_URL: 'https://api.example.org', WEB_URL: 'https://example.org/app/' }).frontendOrigin).toBe('https://example.org');
    expect(() => loadConfig({ BASE_URL: 'https://api.example.org', WEB_URL: 'http://example.org' })).toThrow('WEB_URL: http://example.org must be https, as BASE_URL is');
  });

  it('takes a cookie domain that both addresses are under, and refuses any other', () => {
    const base = { BASE_URL: 'https://api.example.org', WEB_URL: 'https://example.org' };
    expect(loadConfig({ ...base, COOKIE_DOMAIN: 'example.org' }).cookieDomain).toBe('example.org');
    expect(loadConfig(base).cookieDomain).toBeUndefined();
    expect(() => loadConfig({ ...base, COOKIE_DOMAIN: 'api.example.org' })).toThrow('COOKIE_DOMAIN: api.example.org must be the host of WEB_URL (example.org) or a domain it is under');
    expect(() => loadConfig({ ...base, COOKIE_DOMAIN: 'other.org' })).toThrow('must be the host of BASE_URL (api.example.org)');
    expect(() => loadConfig({ ...base, COOKIE_DOMAIN: 'org' })).toThrow('COOKIE_DOMAIN: org must be a domain name under a top-level domain');
    expect(() => loadConfig({ BASE_URL: 'http://10.0.0.1:3000', COOKIE_DOMAIN: '0.0.1' })).toThrow('COOKIE_DOMAIN');
    expect(() => loadConfig({ ...base, COOKIE_DOMAIN: '.Example.org' })).toThrow('COOKIE_DOMAIN is a domain name such as example.org');
  });
});

describe('with a web application on another origin', () => {
  let server: TestServer;
  beforeAll(async () => {
    // The service's address is taken as under the cookie domain; this process reaches it at 127.0.0.1.
    server = await startServer({ WEB_URL: WEB, BASE_URL: 'https://api.review.example.org', COOKIE_DOMAIN: 'review.example.org' });
  });
  afterAll(() => server.close());

  const preflight = (origin: string, path = '/login') =>
    fetch(`${server.url}${path}`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-url,x-source' } });

  it('answers its preflights for every path, naming it and nothing wider', async () => {
    for (const path of ['/login', '/profiles', '/trpc/accounts.tildeUsername', '/attachment/chunk', '/no/such/path']) {
      const res = await preflight(WEB, path);
      expect(res.status, path).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe(WEB);
      expect(res.headers.get('access-control-allow-credentials')).toBe('true');
      expect(res.headers.get('access-control-allow-methods')).toBe('GET, HEAD, POST, PUT, PATCH, DELETE');
      expect(res.headers.get('access-control-allow-headers')).toContain('X-Url, X-Source');
      expect(res.headers.get('access-control-max-age')).toBe('600');
      expect(res.headers.get('vary')).toContain('Origin');
    }
  });

  it('leaves any other origin\'s preflight as it was: no CORS, a 404', async () => {
    for (const origin of [ELSEWHERE, 'null', `${WEB}:444`, WEB.replace('https:', 'http:')]) {
      const res = await preflight(origin);
      expect(res.status, origin).toBe(404);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    }
  });

  it('names it, with credentials, on answers and refusals alike; other origins get none of it', async () => {
    const ours = await fetch(`${server.url}/tildeusername?first=Ada&last=Lovelace`, { headers: { origin: WEB } });
    expect(ours.status).toBe(200);
    expect(ours.headers.get('access-control-allow-origin')).toBe(WEB);
    expect(ours.headers.get('access-control-allow-credentials')).toBe('true');
    expect(ours.headers.get('access-control-expose-headers')).toBe('Retry-After, X-Request-Id');
    const refused = await fetch(`${server.url}/profiles`, { headers: { origin: WEB } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe(WEB);

    const theirs = await fetch(`${server.url}/tildeusername?first=Ada&last=Lovelace`, { headers: { origin: ELSEWHERE } });
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get('access-control-allow-origin')).toBeNull();
    expect(theirs.headers.get('vary')).toContain('Origin');
  });

  it('keeps the public endpoints public: any origin reads them, the web application with its credentials', async () => {
    const jwks = (origin: string) => fetch(`${server.url}/oidc/jwks`, { headers: { origin } });
    expect((await jwks(ELSEWHERE)).headers.get('access-control-allow-origin')).toBe('*');
    const web = await jwks(WEB);
    expect(web.headers.get('access-control-allow-origin')).toBe(WEB);
    expect(web.headers.get('access-control-allow-credentials')).toBe('true');
  });

  it('sets the session cookies for the cookie domain, beside a readable user cookie, and retires this host\'s own', async () => {
    const { id, email } = await createActiveUser(server);
    const login = await fetch(`${server.url}/login`, { method: 'POST', headers: { origin: WEB, 'content-type': 'application/json' }, body: JSON.stringify({ id: email, password: PASSWORD }) });
    expect(login.status).toBe(200);
    const lines = login.headers.getSetCookie();
    const set = (name: string) => lines.filter((line) => line.startsWith(`${name}=`) && !/Expires=Thu, 01 Jan 1970/.test(line));
    const cleared = (name: string) => lines.filter((line) => line.startsWith(`${name}=;`) && /Expires=Thu, 01 Jan 1970/.test(line));
    for (const name of ['service.accessToken', 'service.refreshToken', 'service.user']) {
      expect(set(name), name).toHaveLength(1);
      expect(set(name)[0]).toContain('Domain=review.example.org');
      // One from before `COOKIE_DOMAIN` was set would be sent first, and its refresh token taken as replayed.
      expect(cleared(name), name).toHaveLength(1);
      expect(cleared(name)[0]).not.toContain('Domain=');
    }
    expect(set('service.accessToken')[0]).toContain('HttpOnly');
    expect(set('service.user')[0]).not.toContain('HttpOnly');
    // The device cookie stays this host's own (`__Host-` over https).
    expect(lines.find((line) => line.startsWith('__Host-service.device='))).not.toContain('Domain=');

    const user = JSON.parse(cookiesOf(login)['service.user']!.value) as unknown;
    expect(user).toEqual({ id: email, profile: { id, fullname: 'Grace Hopper', first: 'Grace', last: 'Hopper', preferredId: id, preferredEmail: email, emails: [email], usernames: [id] } });
    const token = ((await login.json()) as { token: string }).token;
    expect(user).toEqual(JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).user);
  });
});

describe('the readable user cookie', () => {
  /** A profile's view with `fullname` (and as long a first and last name). */
  const profile = (fullname: string, names: { first?: string; last?: string } = {}): SimplifiedProfile => ({
    id: '~Ada_Lovelace1',
    fullname,
    ...names,
    emails: ['ada@example.org'],
    preferredEmail: 'ada@example.org',
    usernames: ['~Ada_Lovelace1'],
    preferredId: '~Ada_Lovelace1',
    state: 'Active',
    tokenVersion: 0,
  });
  const session = (view: SimplifiedProfile): IssuedSession => ({
    result: { token: 't', user: { id: 'ada@example.org', profile: view } },
    accessToken: 'a',
    accessSeconds: 60,
    refreshToken: 'r',
    refreshSeconds: 60,
    user: tokenUser('ada@example.org', view.id, view),
  });

  it('is left out, and an older one cleared, when it would outgrow what a browser keeps', () => {
    const calls: string[] = [];
    const res = { cookie: (name: string) => calls.push(`set ${name}`), clearCookie: (name: string) => calls.push(`clear ${name}`) } as unknown as Response;
    const cookies = httpCookies(res, loadConfig({ BASE_URL: 'https://api.example.org' }));
    cookies.set(session(profile('Ada Lovelace')));
    expect(calls).toContain('set service.user');
    calls.length = 0;
    // The longest names a profile may have, in a script URL-encoded at 9 bytes a letter.
    const big = session(profile('漢'.repeat(300), { first: '漢'.repeat(100), last: '漢'.repeat(100) }));
    expect(encodeURIComponent(JSON.stringify(big.user)).length).toBeGreaterThan(USER_COOKIE_BYTES);
    cookies.set(big);
    expect(calls).toEqual(['set service.accessToken', 'set service.refreshToken', 'clear service.user']);
  });
});
