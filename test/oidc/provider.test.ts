import { createHash } from 'node:crypto';
import * as client from 'openid-client';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OIDC_CODE_SECONDS } from '../../shared/index.ts';
import { TestClock } from '../helpers/clock.ts';
import { cookieHeader } from '../helpers/cookies.ts';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';
import { publicClientRecord } from '../../server/oidc/clients.ts';
import { OidcRepository } from '../../server/oidc/repository.ts';
import { admin, authorizationRequest, REDIRECT, registerClient, relyingParty, UserAgent } from './helpers.ts';

let server: TestServer;
const clock = new TestClock();
let person: { id: string; email: string; password: string };
let rp: client.Configuration;

beforeAll(async () => {
  // A rotated key waits twenty seconds before it signs (five minutes by default): the admin
  // command rotates on the real clock, and the server's clock is a little ahead of it by then.
  server = await startServer({ OIDC_KEY_ACTIVATION_SECONDS: '20' }, undefined, { now: clock.now });
  const user = await createActiveUser(server, { fullname: 'Signing In' });
  person = { ...user, password: PASSWORD };
  await registerClient(server, 'app');
  rp = await relyingParty(server, 'app');
}, 60_000);
afterAll(async () => {
  await server.close();
});

/** Signs in through the pages and redeems the code, as an application would. */
async function signIn(extra: Record<string, string> = {}, agent = new UserAgent()) {
  const request = await authorizationRequest(rp, extra);
  const page = await agent.authorize(request.url, person);
  expect(page.location, page.html.slice(0, 300)).toMatch(/^http:\/\/127\.0\.0\.1:9\/callback\?/);
  const tokens = await client.authorizationCodeGrant(rp, new URL(page.location ?? ''), {
    pkceCodeVerifier: request.verifier,
    expectedState: request.state,
    expectedNonce: request.nonce,
    idTokenExpected: true,
  });
  return { tokens, agent, callback: new URL(page.location ?? ''), request };
}

const errorOf = (location: string | null) => {
  const url = new URL(location ?? 'http://x');
  return { error: url.searchParams.get('error'), description: url.searchParams.get('error_description'), state: url.searchParams.get('state'), iss: url.searchParams.get('iss') };
};

describe('discovery', () => {
  it('describes the provider, with the issuer exactly BASE_URL', async () => {
    const doc = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(doc).toMatchObject({
      issuer: server.url,
      authorization_endpoint: `${server.url}/oidc/authorize`,
      token_endpoint: `${server.url}/oidc/token`,
      userinfo_endpoint: `${server.url}/oidc/userinfo`,
      jwks_uri: `${server.url}/oidc/jwks`,
      revocation_endpoint: `${server.url}/oidc/revoke`,
      introspection_endpoint: `${server.url}/oidc/introspect`,
      registration_endpoint: `${server.url}/oidc/register`,
      device_authorization_endpoint: `${server.url}/oidc/device/auth`,
      pushed_authorization_request_endpoint: `${server.url}/oidc/par`,
      scopes_supported: ['openid', 'profile', 'email', 'offline_access'],
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
      subject_types_supported: ['public', 'pairwise'],
      id_token_signing_alg_values_supported: ['RS256'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'],
      introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt'],
      authorization_response_iss_parameter_supported: true,
    });
    expect(doc.claims_supported).toEqual(expect.arrayContaining(['sub', 'name', 'email', 'email_verified', 'amr', 'acr', 'auth_time', 'sid']));
    expect(doc.acr_values_supported).toEqual(['1', '2']);
  });
});

describe('the whole flow, with openid-client as the relying party', () => {
  it('signs in, validates the ID token, reads the claims, and revocation ends the access token', async () => {
    const { tokens, callback, request } = await signIn();
    expect(callback.searchParams.get('iss')).toBe(server.url);
    expect(callback.searchParams.get('state')).toBe(request.state);
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.expires_in).toBe(3600);
    const claims = tokens.claims();
    expect(claims).toMatchObject({ iss: server.url, aud: 'app', sub: person.id, nonce: request.nonce, name: 'Signing In', email: person.email, email_verified: true });
    expect(claims?.auth_time).toEqual(expect.any(Number));
    expect(claims?.at_hash).toEqual(expect.any(String));
    expect(decodeProtectedHeader(tokens.id_token ?? '')).toMatchObject({ alg: 'RS256', kid: expect.any(String) });

    const info = await client.fetchUserInfo(rp, tokens.access_token, person.id);
    expect(info).toEqual({ sub: person.id, name: 'Signing In', email: person.email, email_verified: true });

    await client.tokenRevocation(rp, tokens.access_token);
    const after = await fetch(`${server.url}/oidc/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(after.status).toBe(401);
    expect(after.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });

  it('is seamless the second time: a session and a consent go straight back with a code', async () => {
    const { agent } = await signIn();
    const again = await authorizationRequest(rp);
    const page = await agent.authorize(again.url);
    expect(page.location).toMatch(/^http:\/\/127\.0\.0\.1:9\/callback\?code=/);
  });

  it('works without a nonce, and with the request POSTed, ignoring unknown parameters', async () => {
    const request = await authorizationRequest(rp, { display: 'page', ui_locales: 'fr', login_hint: person.email, acr_values: '1', foo: 'bar' });
    const params = new URLSearchParams(request.url.search);
    params.delete('nonce');
    const agent = new UserAgent();
    let page = await agent.go(`${server.url}/oidc/authorize`, { method: 'POST', body: params, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    page = await agent.submit(page, { email: person.email, password: person.password });
    if (!page.location) page = await agent.submit(page, { decision: 'allow' });
    const tokens = await client.authorizationCodeGrant(rp, new URL(page.location ?? ''), { pkceCodeVerifier: request.verifier, expectedState: request.state, idTokenExpected: true });
    expect(tokens.claims()?.nonce).toBeUndefined();
  });
});

describe('the spec\'s sign-in error messages, word for word', () => {
  it('Client is not approved', async () => {
    await registerClient(server, 'pending-app', { approve: false });
    const res = await fetch(`${server.url}/oidc/authorize?client_id=pending-app&redirect_uri=${encodeURIComponent(REDIRECT)}&response_type=code&scope=openid`, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('Client is not approved');
  });

  it('Invalid client_id', async () => {
    const res = await fetch(`${server.url}/oidc/authorize?client_id=nobody&redirect_uri=${encodeURIComponent(REDIRECT)}&response_type=code&scope=openid`, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('Invalid client_id');
  });

  it('Invalid redirect_uri (never redirected to)', async () => {
    const res = await fetch(`${server.url}/oidc/authorize?client_id=app&redirect_uri=${encodeURIComponent('http://127.0.0.1:9/callback/other')}&response_type=code&scope=openid`, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.text()).toContain('Invalid redirect_uri');
  });

  it('a request without redirect_uri gets the same page, never a redirect', async () => {
    const res = await fetch(`${server.url}/oidc/authorize?client_id=app&response_type=code&scope=openid`, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.text()).toContain('Invalid redirect_uri');
  });

  it.each([
    [{ response_type: 'token' }, 'unsupported_response_type', 'response_type must be code'],
    [{ code_challenge: 'too-short' }, 'invalid_request', 'code_challenge must be the 43-character base64url SHA-256 of the code verifier'],
    [{ scope: 'profile email' }, 'invalid_scope', 'Scope must include openid'],
    [{ code_challenge: '' }, 'invalid_request', 'code_challenge is required for public clients'],
  ])('%j → %s "%s", with state and iss', async (override, error, description) => {
    const request = await authorizationRequest(rp);
    const url = new URL(request.url);
    for (const [k, v] of Object.entries(override)) {
      if (v === '') url.searchParams.delete(k);
      else url.searchParams.set(k, v);
    }
    const res = await fetch(url, { redirect: 'manual' });
    expect(res.status).toBe(303);
    expect(errorOf(res.headers.get('location'))).toEqual({ error, description, state: request.state, iss: server.url });
  });

  it('Unsupported scope: <scope>', async () => {
    await registerClient(server, 'narrow-app', { scopes: 'openid profile' });
    const narrow = await relyingParty(server, 'narrow-app');
    const request = await authorizationRequest(narrow);
    const res = await fetch(request.url, { redirect: 'manual' });
    expect(errorOf(res.headers.get('location'))).toMatchObject({ error: 'invalid_scope', description: 'Unsupported scope: email' });
  });

  it('invalid_grant: Invalid or expired authorization code, for a reused code, and the tokens it gave are revoked', async () => {
    const request = await authorizationRequest(rp);
    const page = await new UserAgent().authorize(request.url, person);
    const code = new URL(page.location ?? '').searchParams.get('code') ?? '';
    const redeem = () =>
      fetch(`${server.url}/oidc/token`, {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: 'app', code_verifier: request.verifier }),
      });
    const first = await redeem();
    expect(first.status).toBe(200);
    expect(first.headers.get('cache-control')).toBe('no-store');
    expect(first.headers.get('pragma')).toBe('no-cache');
    const { access_token } = (await first.json()) as { access_token: string };
    const second = await redeem();
    expect(second.status).toBe(400);
    expect(await second.json()).toEqual({ error: 'invalid_grant', error_description: 'Invalid or expired authorization code' });
    expect((await fetch(`${server.url}/oidc/userinfo`, { headers: { authorization: `Bearer ${access_token}` } })).status).toBe(401);
  });

  it('invalid_grant for all but one of redemptions sent at once, and a token issued meanwhile is revoked', async () => {
    const request = await authorizationRequest(rp);
    const page = await new UserAgent().authorize(request.url, person);
    const code = new URL(page.location ?? '').searchParams.get('code') ?? '';
    const redeem = async () => {
      const res = await fetch(`${server.url}/oidc/token`, {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: 'app', code_verifier: request.verifier }),
      });
      return { status: res.status, body: (await res.json()) as { access_token?: string; error?: string } };
    };
    const answers = await Promise.all([redeem(), redeem(), redeem(), redeem()]);
    const issued = answers.filter((a) => a.status === 200);
    expect(issued.length).toBeLessThanOrEqual(1);
    expect(answers.filter((a) => a.status === 400).every((a) => a.body.error === 'invalid_grant')).toBe(true);
    expect(issued.length + answers.filter((a) => a.status === 400).length).toBe(4);
    for (const { body } of issued) {
      expect((await fetch(`${server.url}/oidc/userinfo`, { headers: { authorization: `Bearer ${body.access_token}` } })).status).toBe(401);
    }
    // A code is sealed (`codes.ts`): its single use is named by the SHA-256 of its id, the part after `c2.`.
    const codeHash = createHash('sha256').update(Buffer.from(code.split('.')[1] ?? '', 'base64url')).digest('hex');
    expect(await server.service.db('oidc_tokens').where({ code_hash: codeHash }).count({ n: '*' })).toEqual([{ n: issued.length }]);
  });

  it('invalid_grant: Invalid code_verifier', async () => {
    const request = await authorizationRequest(rp);
    const page = await new UserAgent().authorize(request.url, person);
    const res = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: new URL(page.location ?? '').searchParams.get('code') ?? '',
        redirect_uri: REDIRECT,
        client_id: 'app',
        code_verifier: client.randomPKCECodeVerifier(),
      }),
    });
    expect(await res.json()).toEqual({ error: 'invalid_grant', error_description: 'Invalid code_verifier' });
  });
});

describe('redirect URIs: equal to a registered one, but for a native application\'s loopback port (RFC 8252 §7.3)', () => {
  /** An approved public client with these redirect URIs; `native`: registered with `application_type: native`. */
  const addClient = (id: string, redirectUris: string[], native = true) =>
    new OidcRepository(server.service.db).insertClient({
      ...publicClientRecord({ id, name: id, redirectUris, scopes: ['openid'] }, Date.now()),
      status: 'approved',
      metadata: native ? { application_type: 'native', redirect_uris: redirectUris } : null,
    });
  /** `/oidc/authorize` for `clientId` with `redirectUri`, in `agent`'s browser session (none: no session). */
  const ask = async (clientId: string, redirectUri: string, agent?: UserAgent) => {
    const verifier = client.randomPKCECodeVerifier();
    const url = new URL(`${server.url}/oidc/authorize`);
    url.search = new URLSearchParams({ client_id: clientId, redirect_uri: redirectUri, response_type: 'code', scope: 'openid', state: 'st', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' }).toString();
    const res = await fetch(url, { redirect: 'manual', ...(agent ? { headers: { cookie: cookieHeader(agent.jar) } } : {}) });
    return { status: res.status, location: res.headers.get('location'), html: await res.text(), verifier };
  };
  const redeem = (clientId: string, code: string, redirectUri: string, verifier: string) =>
    fetch(`${server.url}/oidc/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: clientId, code_verifier: verifier }) });
  const refused = (answer: { status: number; location: string | null; html: string }) => answer.status === 400 && answer.location === null && answer.html.includes('Invalid redirect_uri');
  const toLogin = (answer: { status: number; location: string | null }) => answer.status === 303 && (answer.location ?? '').startsWith(`${server.url}/oidc/login?`);

  it('a web client (an operator\'s, a person\'s, or registered without an application type) is answered at its registered URIs only, port included', async () => {
    await addClient('web-loopback', ['http://127.0.0.1/cb'], false);
    for (const [clientId, uri] of [
      ['app', 'http://127.0.0.1:51234/callback'],
      ['app', 'http://127.0.0.1/callback'],
      ['web-loopback', 'http://127.0.0.1:7000/cb'],
    ] as const) {
      expect(refused(await ask(clientId, uri)), uri).toBe(true);
    }
    expect(toLogin(await ask('web-loopback', 'http://127.0.0.1/cb'))).toBe(true);
  });

  it('answers a native application registered with http://127.0.0.1:9 at the port the request names; the token endpoint asks for that URI exactly', async () => {
    await addClient('native-app', [REDIRECT]);
    const { agent } = await signIn();
    // The person consents to the application once, at its registered URI.
    const consent = new URL(`${server.url}/oidc/authorize`);
    consent.search = new URLSearchParams({ client_id: 'native-app', redirect_uri: REDIRECT, response_type: 'code', scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()), code_challenge_method: 'S256' }).toString();
    expect((await agent.authorize(consent)).location).toMatch(/^http:\/\/127\.0\.0\.1:9\/callback\?/);
    const other = 'http://127.0.0.1:51234/callback';
    const answered = await ask('native-app', other, agent);
    expect(answered.status).toBe(303);
    const back = new URL(answered.location ?? '');
    expect(`${back.origin}${back.pathname}`).toBe(other);
    expect(back.searchParams.get('state')).toBe('st');
    const code = back.searchParams.get('code') ?? '';
    // The registered URI is not the one this code was issued for.
    expect(await (await redeem('native-app', code, REDIRECT, answered.verifier)).json()).toMatchObject({ error: 'invalid_grant' });
    const again = await ask('native-app', other, agent);
    const redeemed = await redeem('native-app', new URL(again.location ?? '').searchParams.get('code') ?? '', other, again.verifier);
    expect(redeemed.status).toBe(200);
  });

  it('ignores a native application\'s port on [::1] too, and on 127.0.0.1 registered without one; never on localhost, nor the path, query or scheme', async () => {
    await addClient('loopback-v6', ['http://[::1]/cb']);
    await addClient('loopback-name', ['http://localhost:9/cb']);
    await addClient('loopback-v4', ['http://127.0.0.1/cb']);
    await addClient('native-9', [REDIRECT]);
    expect(toLogin(await ask('loopback-v6', 'http://[::1]:6000/cb'))).toBe(true);
    expect(toLogin(await ask('loopback-v6', 'http://[::1]/cb'))).toBe(true);
    expect(toLogin(await ask('loopback-v4', 'http://127.0.0.1:7000/cb'))).toBe(true);
    for (const [clientId, uri] of [
      ['loopback-name', 'http://localhost:5000/cb'],
      ['native-9', 'http://127.0.0.1:51234/callback/other'],
      ['native-9', 'http://127.0.0.1:51234/callback?x=1'],
      ['native-9', 'https://127.0.0.1:9/callback'],
      ['native-9', 'http://127.0.0.1:99999/callback'],
      ['native-9', 'http://127.0.0.1:51234@evil.example/callback'],
      ['native-9', 'http://[::1]:9/callback'],
    ] as const) {
      expect(refused(await ask(clientId, uri)), uri).toBe(true);
    }
  });
});

describe('the token endpoint', () => {
  async function freshCode() {
    const request = await authorizationRequest(rp);
    const page = await new UserAgent().authorize(request.url, person);
    return { code: new URL(page.location ?? '').searchParams.get('code') ?? '', verifier: request.verifier };
  }
  const post = (body: Record<string, string>) => fetch(`${server.url}/oidc/token`, { method: 'POST', body: new URLSearchParams(body) });

  it('refuses a redirect_uri other than the request\'s, an expired code, and an unknown client', async () => {
    const one = await freshCode();
    const wrongUri = await post({ grant_type: 'authorization_code', code: one.code, redirect_uri: `${REDIRECT}/x`, client_id: 'app', code_verifier: one.verifier });
    expect(await wrongUri.json()).toMatchObject({ error: 'invalid_grant' });

    const two = await freshCode();
    // Ten minutes and a millisecond later (the clock is put back for the tests after).
    clock.advance(OIDC_CODE_SECONDS * 1000 + 1);
    const expired = await post({ grant_type: 'authorization_code', code: two.code, redirect_uri: REDIRECT, client_id: 'app', code_verifier: two.verifier }).finally(() => clock.advance(-(OIDC_CODE_SECONDS * 1000 + 1)));
    expect(await expired.json()).toEqual({ error: 'invalid_grant', error_description: 'Invalid or expired authorization code' });

    const unknown = await post({ grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT, client_id: 'nobody', code_verifier: 'y' });
    expect(unknown.status).toBe(401);
    expect(await unknown.json()).toEqual({ error: 'invalid_client', error_description: 'Invalid client_id' });
    const grant = await post({ grant_type: 'password', client_id: 'app' });
    expect(await grant.json()).toMatchObject({ error: 'unsupported_grant_type' });
  });

  it('two simultaneous redemptions of one code cannot both succeed', async () => {
    const { code, verifier } = await freshCode();
    const body = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: 'app', code_verifier: verifier };
    const results = await Promise.all([post(body), post(body), post(body)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 400, 400]);
    // The code was presented more than once: the token it gave is revoked too.
    const winner = (await results.find((r) => r.status === 200)?.json()) as { access_token: string };
    expect((await fetch(`${server.url}/oidc/userinfo`, { headers: { authorization: `Bearer ${winner.access_token}` } })).status).toBe(401);
  });
});

describe('PKCE and prompts', () => {
  it('refuses plain PKCE', async () => {
    const request = await authorizationRequest(rp, { code_challenge_method: 'plain' });
    const res = await fetch(request.url, { redirect: 'manual' });
    expect(errorOf(res.headers.get('location'))).toMatchObject({ error: 'invalid_request', description: 'code_challenge_method must be S256' });
  });

  it('prompt=none: login_required without a session, consent_required without consent, a code with both', async () => {
    const noSession = await fetch((await authorizationRequest(rp, { prompt: 'none' })).url, { redirect: 'manual' });
    expect(errorOf(noSession.headers.get('location'))).toMatchObject({ error: 'login_required', iss: server.url });

    const other = await createActiveUser(server);
    const agent = new UserAgent();
    await agent.go(`${server.url}/login`, { method: 'POST', body: JSON.stringify({ id: other.email, password: PASSWORD }), headers: { 'content-type': 'application/json' } });
    const noConsent = await agent.go((await authorizationRequest(rp, { prompt: 'none' })).url.toString());
    expect(errorOf(noConsent.location)).toMatchObject({ error: 'consent_required' });

    const { agent: consented } = await signIn();
    const silent = await consented.go((await authorizationRequest(rp, { prompt: 'none' })).url.toString());
    expect(silent.location).toMatch(/callback\?code=/);
    const combined = await consented.go((await authorizationRequest(rp, { prompt: 'none login' })).url.toString());
    expect(errorOf(combined.location)).toMatchObject({ error: 'invalid_request' });
  });

  it('prompt=login forces the login page; prompt=consent the consent page', async () => {
    const { agent } = await signIn();
    const login = await agent.go((await authorizationRequest(rp, { prompt: 'login' })).url.toString());
    expect(login.html).toContain('action="/oidc/login"');
    const consent = await agent.go((await authorizationRequest(rp, { prompt: 'consent' })).url.toString());
    expect(consent.html).toContain('App app wants to sign you in');
  });

  it('max_age forces a fresh login when the session is older, and auth_time is in the ID token', async () => {
    const { agent } = await signIn();
    clock.advance(1100);
    const old = await agent.go((await authorizationRequest(rp, { max_age: '1' })).url.toString());
    expect(old.html).toContain('action="/oidc/login"');
    const { tokens } = await signIn({ max_age: '10000' }, agent);
    expect(tokens.claims()?.auth_time).toEqual(expect.any(Number));
  });

  it('max_age=0 is satisfied by the sign-in of this very request', async () => {
    const { tokens } = await signIn({ max_age: '0' });
    expect(tokens.claims()?.auth_time).toEqual(expect.any(Number));
  });

  it('a consent cannot stand in for the fresh sign-in that prompt=login or max_age asks for', async () => {
    const { agent } = await signIn();
    for (const extra of [{ prompt: 'login' }, { max_age: '0' }] as Array<Record<string, string>>) {
      const first = await agent.go((await authorizationRequest(rp, extra)).url.toString());
      const interaction = /name="interaction" value="([^"]+)"/.exec(first.html)?.[1] ?? '';
      // Going to the consent page instead of signing in leads back to the login page.
      const consent = await agent.go(`${server.url}/oidc/consent?interaction=${interaction}`);
      expect(consent.html).toContain('action="/oidc/login"');
      const api = new Client(server.url);
      for (const [k, v] of agent.jar) api.jar.set(k, v);
      const json = await api.post('/oidc/authorize/consent', { interactionId: interaction, approved: true });
      expect(json.status).toBe(401);
      expect((await api.post('/oidc/authorize/confirm', { interactionId: interaction })).body.redirectUri).toContain('/oidc/login?interaction=');
    }
  });

  it('Deny sends access_denied back to the client', async () => {
    const someone = await createActiveUser(server);
    const request = await authorizationRequest(rp);
    const page = await new UserAgent().authorize(request.url, { email: someone.email, password: PASSWORD }, 'deny');
    expect(errorOf(page.location)).toMatchObject({ error: 'access_denied', state: request.state, iss: server.url });
  });
});

describe('userinfo', () => {
  it('takes the token in the header (GET, POST) or the form body, never the query string', async () => {
    const { tokens } = await signIn();
    const at = tokens.access_token;
    const get = await fetch(`${server.url}/oidc/userinfo`, { headers: { authorization: `Bearer ${at}` } });
    expect(((await get.json()) as { sub: string }).sub).toBe(person.id);
    const postHeader = await fetch(`${server.url}/oidc/userinfo`, { method: 'POST', headers: { authorization: `Bearer ${at}` } });
    expect(postHeader.status).toBe(200);
    const postBody = await fetch(`${server.url}/oidc/userinfo`, { method: 'POST', body: new URLSearchParams({ access_token: at }) });
    expect(postBody.status).toBe(200);
    const query = await fetch(`${server.url}/oidc/userinfo?access_token=${at}`);
    expect(query.status).toBe(401);
    expect(query.headers.get('www-authenticate')).toBe(`Bearer realm="${server.url}"`);
  });

  it('releases only the claims of the scopes granted', async () => {
    const profileOnly = await signIn({ scope: 'openid profile' });
    expect(await client.fetchUserInfo(rp, profileOnly.tokens.access_token, person.id)).toEqual({ sub: person.id, name: 'Signing In' });
    const emailOnly = await signIn({ scope: 'openid email' });
    expect(await client.fetchUserInfo(rp, emailOnly.tokens.access_token, person.id)).toEqual({ sub: person.id, email: person.email, email_verified: true });
  });

  it('gives a blocked profile no claims', async () => {
    const blocked = await createActiveUser(server);
    const request = await authorizationRequest(rp);
    const page = await new UserAgent().authorize(request.url, { email: blocked.email, password: PASSWORD });
    const tokens = await client.authorizationCodeGrant(rp, new URL(page.location ?? ''), { pkceCodeVerifier: request.verifier, expectedState: request.state, expectedNonce: request.nonce });
    await server.service.db('profiles').where({ id: blocked.id }).update({ state: 'Blocked' });
    expect((await fetch(`${server.url}/oidc/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).status).toBe(401);
  });
});

describe('revocation', () => {
  const revoke = (body: Record<string, string>) => fetch(`${server.url}/oidc/revoke`, { method: 'POST', body: new URLSearchParams(body) });
  const userinfo = async (token: string) => (await fetch(`${server.url}/oidc/userinfo`, { headers: { authorization: `Bearer ${token}` } })).status;

  it('revokes a public client\'s token sent alone, the interface\'s request, and answers 200 to a token it does not know', async () => {
    const { tokens } = await signIn();
    expect((await revoke({ token: 'nonsense' })).status).toBe(200);
    const alone = await revoke({ token: tokens.access_token });
    expect(alone.status).toBe(200);
    expect(await alone.text()).toBe('');
    expect(await userinfo(tokens.access_token)).toBe(401);
    // Again: a revoked token is still one it knows, and still 200.
    expect((await revoke({ token: tokens.access_token })).status).toBe(200);
  });

  it('answers 200 in every case the interface names, revoking only for the token\'s own client; invalid_client for an unknown one', async () => {
    const { tokens } = await signIn();
    await new OidcRepository(server.service.db).insertClient({ ...publicClientRecord({ id: 'other-app', name: 'Other app', redirectUris: [REDIRECT], scopes: ['openid'] }, Date.now()), status: 'approved' });
    expect((await revoke({})).status).toBe(200);
    const noToken = await revoke({ client_id: 'app' });
    expect(noToken.status).toBe(400);
    expect(await noToken.json()).toMatchObject({ error: 'invalid_request' });
    const unknown = await revoke({ token: tokens.access_token, client_id: 'someone-else' });
    expect(unknown.status).toBe(401);
    expect(await unknown.json()).toMatchObject({ error: 'invalid_client' });
    // Another client's token: 200, as the interface has it, and left as it is.
    expect((await revoke({ token: tokens.access_token, client_id: 'other-app' })).status).toBe(200);
    // A body that is not a form carries no token it can read: nothing to do.
    const asJson = await fetch(`${server.url}/oidc/revoke`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: tokens.access_token }) });
    expect(asJson.status).toBe(200);
    expect(await userinfo(tokens.access_token)).toBe(200);
    const done = await revoke({ token: tokens.access_token, token_type_hint: 'access_token', client_id: 'app' });
    expect(done.status).toBe(200);
    expect(await done.text()).toBe('');
    expect(await userinfo(tokens.access_token)).toBe(401);
  });
});

describe('consents and the JSON interaction endpoints', () => {
  it('lists and withdraws consents; a withdrawn consent is asked again', async () => {
    const { agent } = await signIn();
    const { client: api } = await loggedIn(server, person.email);
    const list = await api.get('/oidc/consents');
    expect(list.body.consents).toContainEqual(expect.objectContaining({ clientId: 'app', clientName: 'App app', scopes: expect.arrayContaining(['openid']) }));
    // The real platform's web client lists them ("Third-party apps & services",
    // ConnectedAppsList.js:61-71): `sharedData.join(', ')` and `formatDateTime(tcdate)`.
    const app = (list.body.consents as Array<{ clientId: string; sharedData: string[]; tcdate: number; createdAt: number }>).find((consent) => consent.clientId === 'app');
    expect(app?.sharedData.join(', ')).toBe('OpenReview ID, Name, Email');
    expect(app?.tcdate).toBe(app?.createdAt);
    expect((await api.request('DELETE', '/oidc/consents/app')).status).toBe(200);
    const page = await agent.go((await authorizationRequest(rp)).url.toString());
    expect(page.html).toContain('wants to sign you in');
  });

  it('confirm answers what to ask, consent answers the redirect', async () => {
    const other = await createActiveUser(server);
    const { client: api } = await loggedIn(server, other.email);
    const request = await authorizationRequest(rp);
    const res = await fetch(request.url, { redirect: 'manual', headers: { cookie: cookieHeader(api) } });
    const interactionId = new URL(res.headers.get('location') ?? '').searchParams.get('interaction') ?? '';
    expect((await api.post('/oidc/authorize/confirm', { interactionId })).body).toEqual({ client: { clientName: 'App app' }, scopes: ['openid', 'profile', 'email'].map((scope) => ({ scope, description: expect.any(String) })) });
    const consent = await api.post('/oidc/authorize/consent', { interactionId, approved: true });
    expect(consent.body.redirectUri).toMatch(/^http:\/\/127\.0\.0\.1:9\/callback\?code=/);
  });

  it('lets super users manage clients over the API', async () => {
    const root = await createActiveUser(server, { role: 'superuser' });
    const { client: api } = await loggedIn(server, root.email);
    const added = await api.post('/oidc/clients', { id: 'api-app', name: 'API App', redirectUris: ['https://app.example.org/cb'], scopes: ['openid'] });
    expect(added.body).toMatchObject({ id: 'api-app', status: 'pending' });
    expect((await api.request('PUT', '/oidc/clients/api-app', { status: 'approved' })).body.status).toBe('approved');
    expect((await api.get('/oidc/clients')).body.clients.map((c: { id: string }) => c.id)).toContain('api-app');
    expect((await api.request('DELETE', '/oidc/clients/api-app')).status).toBe(200);
    const user = await loggedIn(server, person.email);
    expect((await user.client.get('/oidc/clients')).status).toBe(403);
    expect((await new Client(server.url).post('/oidc/clients', {})).status).toBe(401);
  });
});

describe('keys (last: it rotates the key every other test signs with)', () => {
  it('after a rotation, an ID token signed before still verifies, and new ones use the new key', async () => {
    const before = await signIn();
    const oldKid = decodeProtectedHeader(before.tokens.id_token ?? '').kid;
    const newKid = (await admin(server, 'oidc-keys', 'rotate')).trim();
    expect(newKid).not.toBe(oldKid);
    // The server reads the key set at most once a second: a rotation by another process (the
    // admin command) is published within that second (issue 16).
    clock.advance(1000);
    const jwks = (await (await fetch(`${server.url}/oidc/jwks`)).json()) as { keys: Array<{ kid: string }> };
    expect(jwks.keys.map((k) => k.kid)).toEqual([newKid, oldKid]);
    expect(JSON.stringify(jwks)).not.toMatch(/"d":/);
    // The ID token from before the rotation verifies against the JWKS published now.
    const keySet = createLocalJWKSet(jwks as never);
    await expect(jwtVerify(before.tokens.id_token ?? '', keySet, { issuer: server.url, audience: 'app' })).resolves.toBeTruthy();
    // Until the new key takes over, the old one signs: a relying party holding the old key set
    // goes on signing people in, with no special casing.
    const during = await signIn({}, before.agent);
    expect(decodeProtectedHeader(during.tokens.id_token ?? '').kid).toBe(oldKid);
    clock.advance(20_100);
    // (A relying party refetches the key set when it meets the new kid, after its own cooldown;
    // the test compresses five minutes into no time, so it uses a fresh one.)
    rp = await relyingParty(server, 'app');
    const after = await signIn({}, before.agent);
    expect(decodeProtectedHeader(after.tokens.id_token ?? '').kid).toBe(newKid);
  });
});
