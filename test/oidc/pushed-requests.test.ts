/**
 * Pushed authorization requests (RFC 9126): a client sends its authorization request to
 * `/oidc/par` first, and the browser carries only `client_id` and the `request_uri` it was
 * answered. `openid-client` v6, unmodified (`buildAuthorizationUrlWithPAR`), is the relying party.
 */
import * as client from 'openid-client';
import { DEVICE_CODE_GRANT } from '../../shared/index.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { approvedRegistrationToken, REDIRECT, registerByHttp, UserAgent } from './helpers.ts';

let server: TestServer;
let person: { email: string; password: string };

beforeAll(async () => {
  server = await startServer();
  person = { ...(await createActiveUser(server, { fullname: 'Pushing Person' })), password: PASSWORD };
}, 60_000);
afterAll(() => server.close());

/** What an error page says of an unknown, expired, used or another client's request_uri. */
const GONE = 'request_uri is invalid, expired, or was already used';

const insecure = { execute: [client.allowInsecureRequests] };

async function registered(metadata: Record<string, unknown>) {
  const answer = await registerByHttp(server, await approvedRegistrationToken(server), { redirect_uris: [REDIRECT], ...metadata });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body;
}

/** `POST /oidc/par` with `fields` (and a Basic header when given): the status and the JSON answer. */
async function push(fields: Record<string, string>, basic?: { id: string; secret: string }) {
  const res = await fetch(`${server.url}/oidc/par`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(basic ? { authorization: `Basic ${Buffer.from(`${basic.id}:${basic.secret}`).toString('base64')}` } : {}) },
    body: new URLSearchParams(fields),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as { request_uri?: string; expires_in?: number; error?: string; error_description?: string } };
}

/** A public client's request, as pushed: PKCE, state and nonce. */
async function publicRequest(clientId: string, extra: Record<string, string> = {}) {
  const verifier = client.randomPKCECodeVerifier();
  const fields = { client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, scope: 'openid profile', state: client.randomState(), nonce: client.randomNonce(), code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', ...extra };
  return { verifier, fields };
}

/** The authorization endpoint with `params`, not followed. */
const authorizeAt = (params: Record<string, string>) => fetch(`${server.url}/oidc/authorize?${new URLSearchParams(params)}`, { redirect: 'manual' });

describe('pushed authorization requests (RFC 9126)', () => {
  it('are discovered, and sign a person in for a confidential client through openid-client, the browser carrying client_id and request_uri alone', async () => {
    const discovered = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(discovered.pushed_authorization_request_endpoint).toBe(`${server.url}/oidc/par`);
    expect(discovered.request_uri_parameter_supported).toBe(false);

    const app = await registered({ client_name: 'Pushing Dashboard' });
    const config = await client.discovery(new URL(server.url), app.client_id, undefined, client.ClientSecretBasic(app.client_secret ?? ''), insecure);
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = await client.buildAuthorizationUrlWithPAR(config, { redirect_uri: REDIRECT, scope: 'openid profile email', state, nonce, code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    expect([...url.searchParams.keys()].sort()).toEqual(['client_id', 'request_uri']);
    expect(url.searchParams.get('request_uri')).toMatch(/^urn:ietf:params:oauth:request_uri:[A-Za-z0-9_-]{43}$/);

    const page = await new UserAgent().authorize(url, person);
    expect(page.location, page.html.slice(0, 300)).toMatch(/^http:\/\/127\.0\.0\.1:9\/callback\?/);
    const tokens = await client.authorizationCodeGrant(config, new URL(page.location ?? ''), { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true });
    expect(tokens.claims()).toMatchObject({ aud: app.client_id, nonce, email: person.email });

    // Used once: the same request_uri again is refused, on a page (no redirect URI was sent to trust).
    const again = await authorizeAt({ client_id: app.client_id, request_uri: url.searchParams.get('request_uri') ?? '' });
    expect(again.status).toBe(400);
    expect(again.headers.get('location')).toBeNull();
    expect(await again.text()).toContain(GONE);
  }, 60_000);

  it('answers 201 with expires_in 60, keeps no credential, and the stored request works for its public client through the pages', async () => {
    const app = await registered({ token_endpoint_auth_method: 'none' });
    const { verifier, fields } = await publicRequest(app.client_id);
    const pushed = await push(fields);
    expect(pushed.status, JSON.stringify(pushed.body)).toBe(201);
    expect(pushed.body.expires_in).toBe(60);
    expect(pushed.headers.get('cache-control')).toBe('no-store');
    const rows = await server.service.db('oidc_pushed_requests').where({ client_id: app.client_id });
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(pushed.body.request_uri);

    const page = await new UserAgent().authorize(`${server.url}/oidc/authorize?${new URLSearchParams({ client_id: app.client_id, request_uri: pushed.body.request_uri ?? '' })}`, person);
    const back = new URL(page.location ?? '');
    expect(back.searchParams.get('state')).toBe(fields.state);
    const code = back.searchParams.get('code') ?? '';
    const token = await fetch(`${server.url}/oidc/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: app.client_id, code_verifier: verifier }) });
    expect(token.status).toBe(200);
    expect(await server.service.db('oidc_pushed_requests').where({ client_id: app.client_id })).toHaveLength(0);
  }, 60_000);

  it('refuses at the endpoint, as JSON, what the authorization endpoint would refuse, and a client that does not prove itself', async () => {
    const confidential = await registered({});
    const open = await registered({ token_endpoint_auth_method: 'none' });
    const { fields } = await publicRequest(open.client_id);
    const cases: Array<[string, Record<string, string>, { id: string; secret: string } | undefined, number, string]> = [
      ['no PKCE from a public client', { ...fields, code_challenge: '' }, undefined, 400, 'invalid_request'],
      ['plain PKCE', { ...fields, code_challenge_method: 'plain' }, undefined, 400, 'invalid_request'],
      ['a redirect URI not registered', { ...fields, redirect_uri: 'https://elsewhere.example/cb' }, undefined, 400, 'invalid_request'],
      ['a scope not granted', { ...fields, scope: 'openid admin' }, undefined, 400, 'invalid_scope'],
      ['no openid', { ...fields, scope: 'profile' }, undefined, 400, 'invalid_scope'],
      ['response_type token', { ...fields, response_type: 'token' }, undefined, 400, 'unsupported_response_type'],
      ['a request_uri inside', { ...fields, request_uri: 'urn:ietf:params:oauth:request_uri:x' }, undefined, 400, 'invalid_request'],
      ['a request object', { ...fields, request: 'e30.e30.' }, undefined, 400, 'request_not_supported'],
      ['an unknown client', { ...fields, client_id: 'nobody-at-all' }, undefined, 401, 'invalid_client'],
      ['no client', Object.fromEntries(Object.entries(fields).filter(([k]) => k !== 'client_id')), undefined, 401, 'invalid_client'],
      ['a confidential client without its secret', { ...fields, client_id: confidential.client_id }, undefined, 401, 'invalid_client'],
      ['a wrong secret', { ...fields, client_id: confidential.client_id }, { id: confidential.client_id, secret: 'wrong' }, 401, 'invalid_client'],
      ['client_id other than the authenticated', { ...fields, client_id: open.client_id }, { id: confidential.client_id, secret: confidential.client_secret ?? '' }, 400, 'invalid_request'],
    ];
    for (const [what, sent, basic, status, error] of cases) {
      const answer = await push(sent, basic);
      expect(answer.status, what).toBe(status);
      expect(answer.body, what).toMatchObject({ error, error_description: expect.any(String) });
    }
    const device = await registered({ token_endpoint_auth_method: 'none', grant_types: [DEVICE_CODE_GRANT], redirect_uris: [] });
    // A device-only client has no redirect URI for the request to name.
    expect(await push({ ...fields, client_id: device.client_id }), 'a device-only client').toMatchObject({ status: 400, body: { error: 'invalid_request', error_description: 'Invalid redirect_uri' } });
    const twice = await fetch(`${server.url}/oidc/par`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `${new URLSearchParams(fields)}&scope=openid` });
    expect(twice.status).toBe(400);
    const json = await fetch(`${server.url}/oidc/par`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(fields) });
    expect(json.status).toBe(400);
    expect(await json.json()).toMatchObject({ error: 'invalid_request' });
    expect(await server.service.db('oidc_pushed_requests').whereIn('client_id', [open.client_id, confidential.client_id])).toHaveLength(0);
  }, 60_000);

  it('keeps no secret a confidential client proves itself with in the form', async () => {
    const app = await registered({ token_endpoint_auth_method: 'client_secret_post' });
    const { fields } = await publicRequest(app.client_id);
    const pushed = await push({ ...fields, client_secret: app.client_secret ?? '' });
    expect(pushed.status, JSON.stringify(pushed.body)).toBe(201);
    const [row] = await server.service.db('oidc_pushed_requests').where({ client_id: app.client_id });
    expect(String(row.params)).not.toContain(app.client_secret ?? '');
    expect(Object.keys(JSON.parse(String(row.params))).sort()).toEqual(['code_challenge', 'code_challenge_method', 'nonce', 'redirect_uri', 'response_type', 'scope', 'state']);
  }, 60_000);

  it('checks a pushed request again when used: a client rejected meanwhile signs nobody in', async () => {
    const app = await registered({ token_endpoint_auth_method: 'none' });
    const { fields } = await publicRequest(app.client_id);
    const pushed = await push(fields);
    await server.service.services.oidc.setClientStatus(app.client_id, 'rejected');
    const used = await authorizeAt({ client_id: app.client_id, request_uri: pushed.body.request_uri ?? '', redirect_uri: REDIRECT });
    expect(used.status).toBe(400);
    expect(used.headers.get('location')).toBeNull();
  }, 60_000);

  it("uses a request once, for its own client, within its minute; other parameters in the query are ignored, a contradicting response_type refused", async () => {
    const app = await registered({ token_endpoint_auth_method: 'none' });
    const other = await registered({ token_endpoint_auth_method: 'none' });
    const pushedUri = async (extra: Record<string, string> = {}) => {
      const { fields, verifier } = await publicRequest(app.client_id, extra);
      const answer = await push(fields);
      expect(answer.status).toBe(201);
      return { uri: answer.body.request_uri ?? '', state: fields.state, verifier };
    };

    // Another client naming it finds nothing, and leaves it for its own.
    const first = await pushedUri();
    const stolen = await authorizeAt({ client_id: other.client_id, request_uri: first.uri });
    expect(stolen.status).toBe(400);
    expect(await stolen.text()).toContain(GONE);
    const agent = new UserAgent();
    const own = await agent.authorize(`${server.url}/oidc/authorize?${new URLSearchParams({ client_id: app.client_id, request_uri: first.uri })}`, person);
    expect(new URL(own.location ?? '').searchParams.get('code')).toBeTruthy();

    // A redirect URI of the client sent beside it takes the error back there, with the state sent.
    const used = await authorizeAt({ client_id: app.client_id, request_uri: first.uri, redirect_uri: REDIRECT, state: 'from-the-query' });
    expect(used.status).toBe(303);
    const refused = new URL(used.headers.get('location') ?? '');
    expect(refused.searchParams.get('error')).toBe('invalid_request_uri');
    expect(refused.searchParams.get('error_description')).toBe(GONE);
    expect(refused.searchParams.get('state')).toBe('from-the-query');

    // Expired: refused, as a made-up one and one not from this endpoint.
    const late = await pushedUri();
    await server.service.db('oidc_pushed_requests').where({ client_id: app.client_id }).update({ expires_at: Date.now() - 1 });
    expect(await (await authorizeAt({ client_id: app.client_id, request_uri: late.uri })).text()).toContain(GONE);
    expect(await (await authorizeAt({ client_id: app.client_id, request_uri: 'urn:ietf:params:oauth:request_uri:made-up' })).text()).toContain(GONE);
    expect(await (await authorizeAt({ client_id: app.client_id, request_uri: 'https://app.example/request.jwt' })).text()).toContain('Only request_uri values from the pushed authorization request endpoint');

    // The pushed scope is what is asked: a scope in the query changes nothing.
    const narrow = await pushedUri({ scope: 'openid' });
    const signedIn = await agent.authorize(`${server.url}/oidc/authorize?${new URLSearchParams({ client_id: app.client_id, request_uri: narrow.uri, scope: 'openid profile email', state: 'not-this' })}`, person);
    const answered = new URL(signedIn.location ?? '');
    expect(answered.searchParams.get('state')).toBe(narrow.state);
    const redeemed = await fetch(`${server.url}/oidc/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code', code: answered.searchParams.get('code') ?? '', redirect_uri: REDIRECT, client_id: app.client_id, code_verifier: narrow.verifier }) });
    expect(((await redeemed.json()) as { scope?: string }).scope).toBe('openid');
    const contradicted = await pushedUri();
    const mismatch = await authorizeAt({ client_id: app.client_id, request_uri: contradicted.uri, response_type: 'none' });
    expect(mismatch.status).toBe(303);
    const contradiction = new URL(mismatch.headers.get('location') ?? '');
    expect([contradiction.searchParams.get('error'), contradiction.searchParams.get('state')]).toEqual(['invalid_request_object', contradicted.state]);
  }, 60_000);

  it('are the only way in for a client registered with require_pushed_authorization_requests', async () => {
    const app = await registered({ token_endpoint_auth_method: 'none', require_pushed_authorization_requests: true });
    const { fields } = await publicRequest(app.client_id);
    const plain = await authorizeAt(fields);
    expect(plain.status).toBe(303);
    const refused = new URL(plain.headers.get('location') ?? '');
    expect(refused.searchParams.get('error')).toBe('invalid_request');
    expect(refused.searchParams.get('state')).toBe(fields.state);
    const pushed = await push(fields);
    expect(pushed.status).toBe(201);
    const page = await new UserAgent().authorize(`${server.url}/oidc/authorize?${new URLSearchParams({ client_id: app.client_id, request_uri: pushed.body.request_uri ?? '' })}`, person);
    expect(new URL(page.location ?? '').searchParams.get('code')).toBeTruthy();
  }, 60_000);
});
