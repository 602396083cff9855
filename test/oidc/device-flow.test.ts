/**
 * The device authorization grant (RFC 8628): a command line asks for codes, the person answers
 * on the device page in a browser, the command line polls the token endpoint. openid-client is
 * the device's side; `UserAgent` (helpers.ts) is the person's browser.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OidcRepository } from '../../server/oidc/repository.ts';
import { DEVICE_CODE_GRANT } from '../../shared/index.ts';
import { TestClock } from '../helpers/clock.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';
import { admin, approvedRegistrationToken, registerByHttp, registerClient, relyingParty, UserAgent } from './helpers.ts';

/** openid-client sends the device's first poll after the 5 s interval. */
const LONG = 30_000;

let server: TestServer;
const clock = new TestClock();
let cli: string;

beforeAll(async () => {
  server = await startServer({}, undefined, { now: clock.now });
  // A command line: a public client with the device grant and refresh tokens, and no redirect URI.
  const registered = await registerByHttp(server, await approvedRegistrationToken(server), {
    client_name: 'Lab CLI',
    application_type: 'native',
    token_endpoint_auth_method: 'none',
    grant_types: [DEVICE_CODE_GRANT, 'refresh_token'],
  });
  expect(registered.status, JSON.stringify(registered.body)).toBe(201);
  expect(registered.body.response_types).toEqual([]);
  cli = registered.body.client_id;
});
afterAll(() => server.close());

interface DeviceCodes {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

/** `POST /oidc/device/auth` as a device sends it: the status and the JSON answer. */
async function askCodes(clientId: string, scope = 'openid profile email') {
  const res = await fetch(`${server.url}/oidc/device/auth`, { method: 'POST', body: new URLSearchParams({ client_id: clientId, scope }) });
  return { status: res.status, body: (await res.json()) as DeviceCodes & { error?: string } };
}

/** One poll of the token endpoint with a device code. */
async function poll(deviceCode: string, clientId = cli) {
  const res = await fetch(`${server.url}/oidc/token`, { method: 'POST', body: new URLSearchParams({ grant_type: DEVICE_CODE_GRANT, device_code: deviceCode, client_id: clientId }) });
  return { status: res.status, body: (await res.json()) as { access_token?: string; id_token?: string; refresh_token?: string; error?: string; error_description?: string } };
}

/** A person's browser, signed in on the account pages' login form after following `url`. */
async function signedInBrowser(url: string, email: string) {
  const ua = new UserAgent();
  let page = await ua.go(url);
  expect(page.url).toContain('/account/login');
  page = await ua.submit(page, { email, password: PASSWORD });
  return { ua, page };
}

/** Types `userCode` on the device page shown, then answers (`decision`), or stops at the confirmation. */
async function answer(ua: UserAgent, page: Awaited<ReturnType<UserAgent['go']>>, userCode: string, decision?: 'allow' | 'deny') {
  const asked = await ua.submit(page, { userCode }, '/account/device');
  if (!decision) return asked;
  return ua.submit(asked, { decision }, '/account/device');
}

describe('a command line signs a person in', () => {
  it('with openid-client: codes, the page, the poll, and the tokens a code gives', async () => {
    const person = await createActiveUser(server, { fullname: 'Dana Device' });
    const config = await relyingParty(server, cli);
    expect(config.serverMetadata().device_authorization_endpoint).toBe(`${server.url}/oidc/device/auth`);
    const codes = await client.initiateDeviceAuthorization(config, { scope: 'openid profile email offline_access' });
    expect(codes.verification_uri).toBe(`${server.url}/account/device`);
    expect(codes.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(codes.verification_uri_complete).toBe(`${codes.verification_uri}?user_code=${codes.user_code}`);
    expect(codes.expires_in).toBe(600);

    // The link with the code: sign in first, then the code is filled in, then what is asked.
    const { ua, page } = await signedInBrowser(codes.verification_uri_complete as string, person.email);
    expect(page.html).toContain(`value="${codes.user_code}"`);
    const asked = await answer(ua, page, codes.user_code);
    expect(asked.status).toBe(200);
    expect(asked.html).toContain('Lab CLI wants to sign you in on a device');
    expect(asked.html).toContain(codes.user_code);
    expect(asked.html).toContain('See your email address');
    const done = await ua.submit(asked, { decision: 'allow' }, '/account/device');
    expect(done.html).toContain('go back to your device');

    const tokens = await client.pollDeviceAuthorizationGrant(config, codes);
    const claims = tokens.claims();
    expect(claims?.sub).toBe(person.id);
    expect(claims?.email).toBe(person.email);
    expect(tokens.refresh_token).toBeTruthy();
    const info = await client.fetchUserInfo(config, tokens.access_token, person.id);
    expect(info.name).toBe('Dana Device');
    // The refresh token works as any other.
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token as string);
    expect(refreshed.access_token).toBeTruthy();

    // The answer is a consent, listed under Applications.
    const { client: api } = await loggedIn(server, person.email);
    const consents = await api.get('/oidc/consents');
    expect(consents.body.consents.map((c: { clientName: string }) => c.clientName)).toEqual(['Lab CLI']);

    // A second collection is refused, and ends what the first gave (as a code presented twice).
    const again = await poll(codes.device_code);
    expect(again).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    const revoked = await fetch(`${server.url}/oidc/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(revoked.status).toBe(401);
    // The refresh-token family too, rotated once meanwhile.
    await expect(client.refreshTokenGrant(config, refreshed.refresh_token as string)).rejects.toMatchObject({ error: 'invalid_grant' });
  }, LONG);
});

describe('while the person has not answered', () => {
  it('is authorization_pending, and slow_down for a device that polls within its interval, which grows by 5 s', async () => {
    const { body: codes } = await askCodes(cli);
    expect(codes.interval).toBe(5);
    expect(await poll(codes.device_code)).toMatchObject({ status: 400, body: { error: 'authorization_pending' } });
    const tooSoon = await poll(codes.device_code);
    expect(tooSoon).toMatchObject({ status: 400, body: { error: 'slow_down' } });
    expect(tooSoon.body.error_description).toContain('10 seconds');
    clock.advance(10_000);
    expect(await poll(codes.device_code)).toMatchObject({ status: 400, body: { error: 'authorization_pending' } });
    // A second of the interval is forgiven (the time an answer takes on its way), not more.
    clock.advance(9_100);
    expect(await poll(codes.device_code)).toMatchObject({ status: 400, body: { error: 'authorization_pending' } });
    clock.advance(8_000);
    expect(await poll(codes.device_code)).toMatchObject({ status: 400, body: { error: 'slow_down' } });
  });

  it('is expired_token once the codes expire, and the page no longer knows the code', async () => {
    const person = await createActiveUser(server, { fullname: 'Eli Expired' });
    const { body: codes } = await askCodes(cli);
    clock.advance(601_000);
    expect(await poll(codes.device_code)).toMatchObject({ status: 400, body: { error: 'expired_token' } });
    const { ua, page } = await signedInBrowser(codes.verification_uri, person.email);
    const refused = await answer(ua, page, codes.user_code);
    expect(refused.status).toBe(404);
    expect(refused.html).toContain('That code is not one a device is waiting with');
  });
});

describe('the person', () => {
  it('denies: access_denied for the device, and the code is answered', async () => {
    const person = await createActiveUser(server, { fullname: 'Nora Nope' });
    const { body: codes } = await askCodes(cli);
    const { ua, page } = await signedInBrowser(codes.verification_uri, person.email);
    const done = await answer(ua, page, codes.user_code.toLowerCase().replace('-', ' '), 'deny');
    expect(done.html).toContain('The device was not signed in');
    expect(await poll(codes.device_code)).toMatchObject({ status: 400, body: { error: 'access_denied' } });
    const again = await answer(ua, await ua.go(codes.verification_uri), codes.user_code);
    expect(again.status).toBe(404);
  });

  it('gets ten wrong codes, then none is compared: the right one too is refused', async () => {
    const person = await createActiveUser(server, { fullname: 'Gus Guesser' });
    const { body: codes } = await askCodes(cli);
    const { ua, page } = await signedInBrowser(codes.verification_uri, person.email);
    for (let i = 0; i < 10; i += 1) {
      const wrong = await answer(ua, page, 'BBBB-BBBB');
      expect(wrong.status).toBe(404);
    }
    const right = await answer(ua, page, codes.user_code);
    expect(right.status).toBe(429);
    expect(await poll(codes.device_code)).toMatchObject({ body: { error: 'authorization_pending' } });
  });

  it('cannot look a code up or answer with an access token alone: the browser session only', async () => {
    const person = await createActiveUser(server, { fullname: 'Tom Token' });
    const { body: codes } = await askCodes(cli);
    const { token } = await loggedIn(server, person.email);
    for (const [procedure, input] of [
      ['oidc.deviceRequest', { userCode: codes.user_code }],
      ['oidc.decideDevice', { userCode: codes.user_code, approved: true }],
    ] as const) {
      const res = await fetch(`${server.url}/trpc/${procedure}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify(input),
      });
      expect(res.status).toBe(403);
      expect(JSON.stringify(await res.json())).toContain('needs your browser session, not an access token');
    }
    expect(await poll(codes.device_code)).toMatchObject({ body: { error: 'authorization_pending' } });
  });

  it('gives back what a right code counted: nine wrong, a right one, one more wrong is still answered', async () => {
    const person = await createActiveUser(server, { fullname: 'Rita Refund' });
    const { body: codes } = await askCodes(cli);
    const { ua, page } = await signedInBrowser(codes.verification_uri, person.email);
    for (let i = 0; i < 9; i += 1) expect((await answer(ua, page, 'BBBB-BBBB')).status).toBe(404);
    expect((await answer(ua, page, codes.user_code)).status).toBe(200);
    expect((await answer(ua, page, 'BBBB-BBBB')).status).toBe(404);
    expect((await answer(ua, page, 'BBBB-BBBB')).status).toBe(429);
  });

  it('answers in two tabs: the second answer is refused, and makes no consent', async () => {
    const person = await createActiveUser(server, { fullname: 'Tess Tabs' });
    const { body: codes } = await askCodes(cli);
    const { ua, page } = await signedInBrowser(codes.verification_uri, person.email);
    const first = await answer(ua, page, codes.user_code);
    const second = await answer(ua, page, codes.user_code);
    expect((await ua.submit(second, { decision: 'deny' }, '/account/device')).html).toContain('The device was not signed in');
    const late = await ua.submit(first, { decision: 'allow' }, '/account/device');
    expect(late.status).toBe(404);
    const { client: api } = await loggedIn(server, person.email);
    expect((await api.get('/oidc/consents')).body.consents).toEqual([]);
    expect(await poll(codes.device_code)).toMatchObject({ body: { error: 'access_denied' } });
  });

  it('two people allowing one code at once: one signs the device in, the other gets a 404 and no consent', async () => {
    const { body: codes } = await askCodes(cli);
    const browsers = await Promise.all(['Ann Anyone', 'Bob Also'].map(async (name) => {
      const person = await createActiveUser(server, { fullname: name });
      const { ua, page } = await signedInBrowser(codes.verification_uri, person.email);
      return { person, ua, asked: await answer(ua, page, codes.user_code) };
    }));
    const answers = await Promise.all(browsers.map(({ ua, asked }) => ua.submit(asked, { decision: 'allow' }, '/account/device')));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 404]);
    const consents = await Promise.all(browsers.map(async ({ person }) => (await (await loggedIn(server, person.email)).client.get('/oidc/consents')).body.consents.length));
    expect(consents.sort()).toEqual([0, 1]);
  });

  it('cannot be an impersonation: a super user acting as someone signs no device in as them', async () => {
    const root = await createActiveUser(server, { role: 'superuser', fullname: 'Root Actor' });
    const target = await createActiveUser(server, { fullname: 'Ivy Impersonated' });
    const { body: codes } = await askCodes(cli);
    const { ua, page } = await signedInBrowser(codes.verification_uri, root.email);
    const started = await ua.go(`${server.url}/impersonate`, { method: 'POST', body: JSON.stringify({ groupId: target.id }), headers: { 'content-type': 'application/json' } });
    expect(started.status).toBe(200);
    const refused = await answer(ua, await ua.go(codes.verification_uri), codes.user_code);
    expect(refused.status).toBe(403);
    expect(refused.html).toContain('An impersonation cannot sign anyone in to a device');
    expect(page.status).toBe(200);
    expect(await poll(codes.device_code)).toMatchObject({ body: { error: 'authorization_pending' } });
  });

  it('refuses a form without its CSRF token', async () => {
    const person = await createActiveUser(server, { fullname: 'Cora Csrf' });
    const { body: codes } = await askCodes(cli);
    const { ua } = await signedInBrowser(codes.verification_uri, person.email);
    const forged = await ua.go(`${server.url}/account/device`, {
      method: 'POST',
      body: new URLSearchParams({ userCode: codes.user_code, decision: 'allow' }),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(forged.status).toBe(403);
    expect(await poll(codes.device_code)).toMatchObject({ body: { error: 'authorization_pending' } });
  });
});

describe('between "Allow" and the collection', () => {
  /** Codes, allowed by a new person in their browser: the codes and the person. */
  async function allowed(name: string) {
    const person = await createActiveUser(server, { fullname: name });
    const { body: codes } = await askCodes(cli);
    const { ua, page } = await signedInBrowser(codes.verification_uri, person.email);
    expect((await answer(ua, page, codes.user_code, 'allow')).html).toContain('go back to your device');
    return { codes, person };
  }

  it('a consent withdrawn voids the answer', async () => {
    const { codes, person } = await allowed('Walt Withdrawn');
    const { client: api } = await loggedIn(server, person.email);
    expect((await api.request('DELETE', `/oidc/consents/${cli}`)).status).toBe(200);
    expect(await poll(codes.device_code)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });

  it('a sign-out everywhere voids the answer', async () => {
    const { codes, person } = await allowed('Sid Signout');
    const { client: api } = await loggedIn(server, person.email);
    expect((await api.post('/logout-all-devices', {})).status).toBe(200);
    expect(await poll(codes.device_code)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });

  it('the codes expiring first is expired_token', async () => {
    const { codes } = await allowed('Ezra Late');
    clock.advance(601_000);
    expect(await poll(codes.device_code)).toMatchObject({ status: 400, body: { error: 'expired_token' } });
  });
});

describe('clients', () => {
  it('a device code is its own client’s: another client’s is invalid_grant', async () => {
    const other = await registerByHttp(server, await approvedRegistrationToken(server), { token_endpoint_auth_method: 'none', grant_types: [DEVICE_CODE_GRANT] });
    const { body: codes } = await askCodes(cli);
    expect(await poll(codes.device_code, other.body.client_id)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(await poll('not-a-device-code')).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });

  it('not registered for the grant: unauthorized_client; unknown: invalid_client; a scope it may not ask: invalid_scope', async () => {
    await registerClient(server, 'web-only');
    expect(await askCodes('web-only')).toMatchObject({ status: 400, body: { error: 'unauthorized_client' } });
    expect(await askCodes('nobody')).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    expect(await askCodes(cli, 'profile')).toMatchObject({ status: 400, body: { error: 'invalid_scope' } });
    const tokenOfWebOnly = await poll('x', 'web-only');
    expect(tokenOfWebOnly).toMatchObject({ status: 400, body: { error: 'unauthorized_client' } });
  });

  it('a confidential device client proves itself: without its secret, invalid_client', async () => {
    const registered = await registerByHttp(server, await approvedRegistrationToken(server), { grant_types: [DEVICE_CODE_GRANT], token_endpoint_auth_method: 'client_secret_post' });
    expect(await askCodes(registered.body.client_id)).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    const res = await fetch(`${server.url}/oidc/device/auth`, {
      method: 'POST',
      body: new URLSearchParams({ client_id: registered.body.client_id, client_secret: registered.body.client_secret ?? '', scope: 'openid' }),
    });
    expect(res.status).toBe(200);
  });

  it('a device-only client with redirect URIs is refused at the authorization endpoint', async () => {
    const registered = await registerByHttp(server, await approvedRegistrationToken(server), { grant_types: [DEVICE_CODE_GRANT], token_endpoint_auth_method: 'none', redirect_uris: ['https://tv.example.org/cb'] });
    expect(registered.status).toBe(201);
    const query = new URLSearchParams({ client_id: registered.body.client_id, redirect_uri: 'https://tv.example.org/cb', response_type: 'code', scope: 'openid', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' });
    const res = await fetch(`${server.url}/oidc/authorize?${query}`, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('not registered for the authorization_code grant');
  });

  it('an operator adds a command line: npm run admin -- oidc-client device, then approve', async () => {
    expect((await admin(server, 'oidc-client', 'device', '--id', 'lab-tool', '--name', 'Lab Tool', '--scopes', 'openid profile', '--offline')).trim()).toBe('lab-tool\tpending');
    expect(await askCodes('lab-tool', 'openid profile offline_access')).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    await admin(server, 'oidc-client', 'approve', 'lab-tool');
    // Another process approved it: this one reads client records at most once a second.
    clock.advance(2_000);
    const asked = await askCodes('lab-tool', 'openid profile offline_access');
    expect(asked.status).toBe(200);
    const row = await new OidcRepository(server.service.db).findClient('lab-tool');
    expect({ grantTypes: row?.grantTypes, redirectUris: row?.redirectUris, scopes: row?.scopes, authMethod: row?.authMethod }).toEqual({
      grantTypes: [DEVICE_CODE_GRANT, 'refresh_token'],
      redirectUris: [],
      scopes: ['openid', 'profile', 'offline_access'],
      authMethod: 'none',
    });
  }, LONG);

  it('a person registering an application gives an address to come back to, but for a device', async () => {
    const person = await createActiveUser(server, { fullname: 'Reg Istrar' });
    const { client: api } = await loggedIn(server, person.email);
    const browserApp = await api.post('/trpc/oidc.registerApplication', { name: 'No Address', redirectUris: [], kind: 'public', offline: false });
    expect(browserApp.status).toBe(400);
    expect(JSON.stringify(browserApp.body)).toContain('Give at least one address to come back to');
    const device = await api.post('/trpc/oidc.registerApplication', { name: 'Sync Tool', redirectUris: [], kind: 'device', offline: true });
    expect(device.status).toBe(200);
    const row = await new OidcRepository(server.service.db).findClient(device.body.result.data.clientId);
    expect(row?.grantTypes).toEqual([DEVICE_CODE_GRANT, 'refresh_token']);
    expect(row?.redirectUris).toEqual([]);
  });

  it('a person\'s public application coming back to a loopback address or its own scheme is a native one; one at https a web one', async () => {
    const person = await createActiveUser(server, { fullname: 'App Kinds' });
    const { client: api } = await loggedIn(server, person.email);
    const typeOf = async (redirectUris: string[]) => {
      const made = await api.post('/trpc/oidc.registerApplication', { name: 'Kinds', redirectUris, kind: 'public', offline: false });
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      return (await new OidcRepository(server.service.db).findClient(made.body.result.data.clientId))?.metadata?.application_type;
    };
    expect(await typeOf(['http://127.0.0.1:8765/cb'])).toBe('native');
    expect(await typeOf(['com.example.kinds:/cb'])).toBe('native');
    expect(await typeOf(['https://kinds.example.org/cb'])).toBe('web');
    expect(await typeOf(['https://kinds.example.org/cb', 'http://127.0.0.1/cb'])).toBe('web');
    // A web application may not use a scheme of its own: said in a person's words.
    const refused = await api.post('/trpc/oidc.registerApplication', { name: 'Kinds', redirectUris: ['https://kinds.example.org/cb', 'com.example.kinds:/cb'], kind: 'public', offline: false });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('The address must use https');
  });

  it('a person registers ten applications a day: each waits in the operators\' queue', async () => {
    const person = await createActiveUser(server, { fullname: 'Many Apps' });
    const { client: api } = await loggedIn(server, person.email);
    const register = () => api.post('/trpc/oidc.registerApplication', { name: 'One More', redirectUris: [], kind: 'device', offline: false });
    // A refused form counts for nothing.
    expect((await api.post('/trpc/oidc.registerApplication', { name: 'No Address', redirectUris: [], kind: 'public', offline: false })).status).toBe(400);
    for (let i = 0; i < 10; i += 1) expect((await register()).status).toBe(200);
    const refused = await register();
    expect(refused.status).toBe(429);
    expect(refused.body.error.data.error).toMatchObject({ name: 'TooManyError', details: { retryAfter: expect.any(Number) } });
  });

  it('registration: redirect URIs only with the authorization_code grant, response_types matching it', async () => {
    const token = () => approvedRegistrationToken(server);
    expect((await registerByHttp(server, await token(), { grant_types: ['authorization_code', DEVICE_CODE_GRANT] })).body).toMatchObject({ error: 'invalid_redirect_uri' });
    expect((await registerByHttp(server, await token(), { grant_types: [DEVICE_CODE_GRANT], response_types: ['code'] })).body).toMatchObject({ error: 'invalid_client_metadata' });
    expect((await registerByHttp(server, await token(), { grant_types: ['refresh_token'] })).body).toMatchObject({ error: 'invalid_client_metadata' });
    // A pairwise client's sector is its redirect URIs': without any, a sector document (here one
    // listing nothing, served by another application's host) would prove nothing.
    const sector = createServer((_req, res) => res.end('[]'));
    await new Promise<void>((resolve) => sector.listen(0, '127.0.0.1', resolve));
    try {
      const sectorUri = `http://127.0.0.1:${(sector.address() as AddressInfo).port}/sector.json`;
      const pairwise = await registerByHttp(server, await token(), { grant_types: [DEVICE_CODE_GRANT], token_endpoint_auth_method: 'none', subject_type: 'pairwise', sector_identifier_uri: sectorUri });
      expect(pairwise.body).toMatchObject({ error: 'invalid_client_metadata', error_description: expect.stringContaining('A pairwise client needs redirect_uris') });
    } finally {
      sector.close();
    }
    const both = await registerByHttp(server, await token(), { grant_types: ['authorization_code', DEVICE_CODE_GRANT], redirect_uris: ['https://app.example.org/cb'] });
    expect(both.status).toBe(201);
    expect(both.body.response_types).toEqual(['code']);
  });

  // Last: it spends the address's allowance, which every test of this file shares.
  it('an address asking for too many device codes gets 429 with Retry-After, in RFC 6749 §5.2 words (slow_down is the token endpoint\'s)', async () => {
    let last: Response | undefined;
    for (let i = 0; i < 110; i += 1) {
      last = await fetch(`${server.url}/oidc/device/auth`, { method: 'POST', body: new URLSearchParams({ client_id: cli, scope: 'openid' }) });
      if (last.status !== 200) break;
    }
    expect(last?.status).toBe(429);
    expect(Number(last?.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await last?.json()).toMatchObject({ error: 'invalid_request' });
  });
});
