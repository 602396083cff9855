/**
 * Edges where a side-by-side run against node-oidc-provider found us answering otherwise, and
 * the standards side with the reference: request objects, a missing `response_type`, the
 * response modes, unknown `prompt` values, `id_token_hint` at the authorization endpoint, a
 * token request without a code, a secret sent the other way, UserInfo's malformed requests,
 * registration without a token, and the metadata's and key set's addresses and types.
 */
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { approvedRegistrationToken, authorizationRequest, REDIRECT, redeemCode, registerByHttp, registerClient, relyingParty, UserAgent } from './helpers.ts';

let server: TestServer;
let rp: client.Configuration;
let ada: { id: string; email: string; password: string };
let grace: { id: string; email: string; password: string };

beforeAll(async () => {
  server = await startServer();
  await registerClient(server, 'app');
  await registerClient(server, 'other-app');
  rp = await relyingParty(server, 'app');
  ada = { ...(await createActiveUser(server)), password: PASSWORD };
  grace = { ...(await createActiveUser(server)), password: PASSWORD };
}, 60_000);
afterAll(() => server.close());

/** The authorization request with `extra` (a value of '' leaves the parameter out), sent from `agent`'s browser; the answer, not followed. */
async function authorize(extra: Record<string, string>, agent = new UserAgent()) {
  const request = await authorizationRequest(rp);
  const url = new URL(request.url);
  for (const [name, value] of Object.entries(extra)) {
    if (value === '') url.searchParams.delete(name);
    else url.searchParams.set(name, value);
  }
  const headers = agent.jar.size > 0 ? { cookie: [...agent.jar].map(([k, v]) => `${k}=${v}`).join('; ') } : undefined;
  const res = await fetch(url, { redirect: 'manual', ...(headers ? { headers } : {}) });
  return { res, location: new URL(res.headers.get('location') ?? 'http://x', server.url), request };
}

/** The error an authorization request was sent back to the client with. */
async function errorOf(extra: Record<string, string>, agent?: UserAgent) {
  const { res, location } = await authorize(extra, agent);
  expect(res.status).toBe(303);
  expect(location.origin + location.pathname).toBe(REDIRECT);
  return location.searchParams.get('error');
}

/** A browser signed in as `person`, and an ID token of theirs for `app`. */
async function signedIn(person: { email: string; password: string }) {
  const agent = new UserAgent();
  const request = await authorizationRequest(rp);
  const page = await agent.authorize(request.url, person);
  const code = new URL(page.location ?? 'http://x').searchParams.get('code') ?? '';
  const { body } = await redeemCode(server, 'app', code, request.verifier);
  return { agent, idToken: body.id_token ?? '', accessToken: body.access_token ?? '' };
}

describe('the authorization request', () => {
  it('refuses request objects, by value or by reference (OpenID Connect Core §6)', async () => {
    expect(await errorOf({ request: 'eyJhbGciOiJub25lIn0.e30.' })).toBe('request_not_supported');
    expect(await errorOf({ request_uri: 'https://app.example/request.jwt' })).toBe('request_uri_not_supported');
  });

  it('asks for response_type (invalid_request) before it tells which ones it supports', async () => {
    expect(await errorOf({ response_type: '' })).toBe('invalid_request');
    expect(await errorOf({ response_type: 'token' })).toBe('unsupported_response_type');
  });

  it('answers in the query, the fragment or a form post, as asked, and refuses another response mode', async () => {
    expect(await errorOf({ response_mode: 'web_message' })).toBe('invalid_request');
    const query = await authorize({ response_mode: 'query' });
    expect(query.res.status).toBe(303);
    expect(query.location.pathname).toBe('/oidc/login');
    // An error after the mode is known goes back that way: in the fragment,
    const fragment = await authorize({ response_mode: 'fragment', response_type: 'token' });
    expect(fragment.location.origin + fragment.location.pathname).toBe(REDIRECT);
    expect(fragment.location.search).toBe('');
    expect(new URLSearchParams(fragment.location.hash.slice(1)).get('error')).toBe('unsupported_response_type');
    // (a parameter sent twice too),
    const twice = new URL((await authorizationRequest(rp)).url);
    twice.searchParams.set('response_mode', 'fragment');
    twice.searchParams.append('scope', 'openid');
    const twiceBack = new URL((await fetch(twice, { redirect: 'manual' })).headers.get('location') ?? 'http://x');
    expect(new URLSearchParams(twiceBack.hash.slice(1)).get('error')).toBe('invalid_request');
    // or as a page that posts it to the redirect URI, which its policy lets a form reach.
    const posted = await authorize({ response_mode: 'form_post', response_type: 'token' });
    expect(posted.res.status).toBe(200);
    expect(posted.res.headers.get('cache-control')).toBe('no-store');
    expect(posted.res.headers.get('content-security-policy')).toContain(`form-action 'self' ${new URL(REDIRECT).origin}`);
    const html = await posted.res.text();
    expect(html).toContain(`<form method="post" action="${REDIRECT}" data-auto-submit>`);
    expect(html).toContain('<input type="hidden" name="error" value="unsupported_response_type">');
    expect(html).toContain(`<input type="hidden" name="iss" value="${server.url}">`);
  });

  it('lets the answer’s form reach a native app’s private-use scheme', async () => {
    await registerClient(server, 'native-app', { redirect: 'com.example.app:/cb' });
    const url = new URL(`${server.url}/oidc/authorize`);
    url.search = new URLSearchParams({ client_id: 'native-app', redirect_uri: 'com.example.app:/cb', response_type: 'token', response_mode: 'form_post', scope: 'openid' }).toString();
    const res = await fetch(url, { redirect: 'manual' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("form-action 'self' com.example.app:;");
    expect(await res.text()).toContain('<form method="post" action="com.example.app:/cb" data-auto-submit>');
  });

  it('sends the code in the fragment when asked, and a signed-in person straight back', async () => {
    const { agent } = await signedIn(ada);
    const { location, request } = await authorize({ response_mode: 'fragment' }, agent);
    expect(location.search).toBe('');
    const answer = new URLSearchParams(location.hash.slice(1));
    expect(answer.get('state')).toBe(request.state);
    expect(answer.get('iss')).toBe(server.url);
    expect((await redeemCode(server, 'app', answer.get('code') ?? '', request.verifier)).status).toBe(200);
  });

  it('refuses a prompt value it does not know, and shows a signed-in person the login page for select_account', async () => {
    expect(await errorOf({ prompt: 'sideways' })).toBe('invalid_request');
    expect(await errorOf({ prompt: 'login sideways' })).toBe('invalid_request');
    const { agent } = await signedIn(ada);
    const { location } = await authorize({ prompt: 'select_account' }, agent);
    expect(location.pathname).toBe('/oidc/login');
  });

  it('sends no empty state back, and lets no cache keep its redirect', async () => {
    const empty = new URL((await authorizationRequest(rp)).url);
    empty.searchParams.set('state', '');
    empty.searchParams.set('response_type', 'token');
    const answer = await fetch(empty, { redirect: 'manual' });
    expect(answer.headers.get('cache-control')).toBe('no-store');
    const back = new URL(answer.headers.get('location') ?? 'http://x');
    expect(back.searchParams.get('error')).toBe('unsupported_response_type');
    expect(back.searchParams.has('state')).toBe(false);
  });

  it('takes a long state of a client’s own through the sign-in, and bounds it', async () => {
    // ASP.NET Core's state is a sealed blob of several hundred characters, often past 500.
    const state = 'CfDJ8' + 'x'.repeat(1500);
    const { location, request } = await authorize({ state });
    expect(location.pathname).toBe('/oidc/login');
    const page = await new UserAgent().authorize(location.toString(), ada);
    const back = new URL(page.location ?? 'http://x');
    expect(back.searchParams.get('state')).toBe(state);
    expect((await redeemCode(server, 'app', back.searchParams.get('code') ?? '', request.verifier)).status).toBe(200);
    expect(await errorOf({ state: 'x'.repeat(2049) })).toBe('invalid_request');
  });

  it('honours an id_token_hint naming the person signed in, and signs no one else in under it', async () => {
    const adaSignedIn = await signedIn(ada);
    const graceSignedIn = await signedIn(grace);
    // Ada's own hint, in Ada's browser: a code at once, even with prompt=none.
    const own = await authorize({ prompt: 'none', id_token_hint: adaSignedIn.idToken }, adaSignedIn.agent);
    expect(own.location.searchParams.get('code')).toEqual(expect.any(String));
    // Ada's hint in Grace's browser: login_required with prompt=none, the login page without.
    expect(await errorOf({ prompt: 'none', id_token_hint: adaSignedIn.idToken }, graceSignedIn.agent)).toBe('login_required');
    const other = await authorize({ id_token_hint: adaSignedIn.idToken }, graceSignedIn.agent);
    expect(other.location.pathname).toBe('/oidc/login');
    // Signing in there as someone else still is not the hinted person: login_required.
    const wrong = await graceSignedIn.agent.authorize(other.location.toString(), grace);
    expect(new URL(wrong.location ?? 'http://x').searchParams.get('error')).toBe('login_required');
    // Signing in as the hinted person goes on.
    const hinted = await authorize({ id_token_hint: adaSignedIn.idToken }, graceSignedIn.agent);
    const page = await graceSignedIn.agent.authorize(hinted.location.toString(), ada);
    const code = new URL(page.location ?? 'http://x').searchParams.get('code') ?? '';
    const { body: tokens } = await redeemCode(server, 'app', code, hinted.request.verifier);
    expect(JSON.parse(Buffer.from((tokens.id_token ?? '').split('.')[1] ?? '', 'base64url').toString()).sub).toBe(ada.id);
    // Not an ID token of this provider, or one issued to another client: invalid_request.
    expect(await errorOf({ id_token_hint: 'not-a-token' }, adaSignedIn.agent)).toBe('invalid_request');
    const forgedPayload = adaSignedIn.idToken.split('.');
    forgedPayload[1] = Buffer.from(JSON.stringify({ iss: server.url, sub: grace.id, aud: 'app' })).toString('base64url');
    expect(await errorOf({ id_token_hint: forgedPayload.join('.') }, adaSignedIn.agent)).toBe('invalid_request');
    const otherApp = await relyingParty(server, 'other-app');
    const request = await authorizationRequest(otherApp);
    const forOther = await adaSignedIn.agent.authorize(request.url, ada);
    const otherCode = new URL(forOther.location ?? 'http://x').searchParams.get('code') ?? '';
    const { body: otherTokens } = await redeemCode(server, 'other-app', otherCode, request.verifier);
    expect(await errorOf({ id_token_hint: otherTokens.id_token ?? '' }, adaSignedIn.agent)).toBe('invalid_request');
  });
});

describe('the token endpoint', () => {
  it('answers a request without a code invalid_request (RFC 6749 §5.2), not invalid_grant', async () => {
    const res = await fetch(`${server.url}/oidc/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code', redirect_uri: REDIRECT, client_id: 'app', code_verifier: 'v'.repeat(43) }) });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'invalid_request', error_description: 'code is required' });
  });

  it('takes a secret in the form from a client registered for Basic (RFC 6749 §2.3.1 both ways)', async () => {
    const answer = await registerByHttp(server, await approvedRegistrationToken(server), { redirect_uris: [REDIRECT] });
    const app = answer.body as { client_id: string; client_secret: string };
    const config = await client.discovery(new URL(server.url), app.client_id, undefined, client.ClientSecretPost(app.client_secret), { execute: [client.allowInsecureRequests] });
    const request = await authorizationRequest(config);
    const page = await new UserAgent().authorize(request.url, ada);
    const tokens = await client.authorizationCodeGrant(config, new URL(page.location ?? ''), { pkceCodeVerifier: request.verifier, expectedState: request.state, expectedNonce: request.nonce });
    expect(tokens.claims()).toMatchObject({ sub: ada.id, aud: app.client_id });
  });
});

describe('UserInfo', () => {
  it('answers a malformed request invalid_request, 400, with its challenge and no-store (RFC 6750 §3.1)', async () => {
    const { accessToken } = await signedIn(ada);
    const twice = await fetch(`${server.url}/oidc/userinfo`, { method: 'POST', headers: { authorization: `Bearer ${accessToken}` }, body: new URLSearchParams({ access_token: accessToken }) });
    const empty = await fetch(`${server.url}/oidc/userinfo`, { headers: { authorization: 'Bearer ' } });
    for (const res of [twice, empty]) {
      expect(res.status).toBe(400);
      expect(res.headers.get('www-authenticate')).toMatch(new RegExp(`^Bearer realm="${server.url}", error="invalid_request"`));
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(await res.json()).toMatchObject({ error: 'invalid_request' });
    }
    // No credentials at all: a challenge without an error code, as before.
    const none = await fetch(`${server.url}/oidc/userinfo`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe(`Bearer realm="${server.url}"`);
  });
});

describe('registration', () => {
  it('challenges a request without a token without an error code, and lets no cache keep a refusal', async () => {
    const res = await registerByHttp(server, undefined, { redirect_uris: [REDIRECT] });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(`Bearer realm="${server.url}"`);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const wrong = await registerByHttp(server, 'not-a-token', { redirect_uris: [REDIRECT] });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token"/);
    expect(wrong.headers.get('cache-control')).toBe('no-store');
  });
});

describe('metadata and keys', () => {
  it('serves the discovery document as OAuth authorization server metadata too (RFC 8414), and the key set as a JWK Set', async () => {
    const oidc = await fetch(`${server.url}/.well-known/openid-configuration`);
    const oauth = await fetch(`${server.url}/.well-known/oauth-authorization-server`);
    expect(oauth.status).toBe(200);
    expect(oauth.headers.get('access-control-allow-origin')).toBe('*');
    expect(await oauth.json()).toEqual(await oidc.json());
    const jwks = await fetch(`${server.url}/oidc/jwks`);
    expect(jwks.headers.get('content-type')).toBe('application/jwk-set+json; charset=utf-8');
    expect(((await jwks.json()) as { keys: unknown[] }).keys.length).toBeGreaterThan(0);
  });
});
