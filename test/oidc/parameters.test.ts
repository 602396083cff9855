import type * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { decodeJwt } from 'jose';
import { approvedRegistrationToken, authorizationRequest, REDIRECT, registerByHttp, registerClient, relyingParty, UserAgent } from './helpers.ts';

/** Requests of odd shapes at the protocol endpoints: each gets the protocol's error, never a 500. */
let server: TestServer;
let rp: client.Configuration;
let person: { email: string; password: string };

beforeAll(async () => {
  server = await startServer();
  await registerClient(server, 'app');
  rp = await relyingParty(server, 'app');
  person = { email: (await createActiveUser(server)).email, password: PASSWORD };
}, 60_000);
afterAll(async () => {
  await server.close();
});

const token = (body: string | URLSearchParams, headers: Record<string, string> = {}) =>
  fetch(`${server.url}/oidc/token`, { method: 'POST', body, headers: typeof body === 'string' ? { 'content-type': 'application/x-www-form-urlencoded', ...headers } : headers });

describe('/oidc/authorize: a parameter sent twice (RFC 6749 §3.1)', () => {
  it('client_id or redirect_uri twice: a page, never a redirect', async () => {
    for (const name of ['client_id', 'redirect_uri']) {
      const url = new URL((await authorizationRequest(rp)).url);
      url.searchParams.append(name, url.searchParams.get(name) ?? '');
      const res = await fetch(url, { redirect: 'manual' });
      expect(res.status, name).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(await res.text()).toContain(`${name} must be sent once, as a plain value`);
    }
  });

  it('any other parameter twice: invalid_request back to the client', async () => {
    for (const name of ['state', 'nonce', 'scope', 'code_challenge', 'response_type']) {
      const url = new URL((await authorizationRequest(rp)).url);
      url.searchParams.append(name, 'again');
      const res = await fetch(url, { redirect: 'manual' });
      const location = new URL(res.headers.get('location') ?? 'http://x');
      expect(location.origin + location.pathname, name).toBe(REDIRECT);
      expect(location.searchParams.get('error')).toBe('invalid_request');
      expect(location.searchParams.get('error_description')).toBe(`${name} must be sent once, as a plain value`);
    }
  });
});

describe('/oidc/token', () => {
  it('a parameter sent twice, or grant_type missing, is invalid_request', async () => {
    const request = await authorizationRequest(rp);
    const page = await new UserAgent().authorize(request.url, person);
    const code = new URL(page.location ?? 'http://x').searchParams.get('code') ?? '';
    const body = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: 'app', code_verifier: request.verifier });
    body.append('code', code);
    const twice = await token(body);
    expect(twice.status).toBe(400);
    expect(await twice.json()).toEqual({ error: 'invalid_request', error_description: 'code must be sent once, as a plain value' });
    const noGrant = await token(new URLSearchParams({ code, redirect_uri: REDIRECT, client_id: 'app', code_verifier: request.verifier }));
    expect(await noGrant.json()).toEqual({ error: 'invalid_request', error_description: 'grant_type is required' });
    // Neither used the code up.
    const good = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: 'app', code_verifier: request.verifier });
    expect((await token(good)).status).toBe(200);
  });

  it('a code redeemed without its redirect_uri is invalid_request, with a wrong one invalid_grant, and neither uses it up', async () => {
    const request = await authorizationRequest(rp);
    const page = await new UserAgent().authorize(request.url, person);
    const code = new URL(page.location ?? 'http://x').searchParams.get('code') ?? '';
    const without = await token(new URLSearchParams({ grant_type: 'authorization_code', code, client_id: 'app', code_verifier: request.verifier }));
    expect(await without.json()).toEqual({ error: 'invalid_request', error_description: 'redirect_uri is required' });
    const wrong = await token(new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: `${REDIRECT}/other`, client_id: 'app', code_verifier: request.verifier }));
    expect(((await wrong.json()) as { error: string }).error).toBe('invalid_grant');
    expect((await token(new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: 'app', code_verifier: request.verifier }))).status).toBe(200);
  });

  it('a JSON body, an empty body, or a garbage Basic header get the protocol error, not a 500', async () => {
    const json = await fetch(`${server.url}/oidc/token`, { method: 'POST', body: JSON.stringify({ grant_type: 'authorization_code' }), headers: { 'content-type': 'application/json' } });
    expect(json.status).toBe(400);
    expect(await json.json()).toMatchObject({ error: 'invalid_request' });
    const empty = await token('');
    expect(empty.status).toBe(401);
    expect(await empty.json()).toEqual({ error: 'invalid_client', error_description: 'Invalid client_id' });
    // The header is a client's attempt to authenticate (confidential clients use it): a garbled one
    // is invalid_client, with the Basic challenge RFC 6749 §5.2 asks for.
    const basic = await token('grant_type=authorization_code&client_id=app&code=x', { authorization: 'Basic %%%not-base64' });
    expect(basic.status).toBe(401);
    expect(basic.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
    expect(await basic.json()).toEqual({ error: 'invalid_client', error_description: 'Invalid client authentication' });
  });
});

describe('/oidc/authorize: login_hint (OpenID Connect Core §3.1.2.1)', () => {
  it('fills the login page’s first field, as text, and is bounded', async () => {
    const hinted = await new UserAgent().authorize((await authorizationRequest(rp, { login_hint: 'chair@venue.example' })).url);
    expect(hinted.html).toMatch(/<input[^>]*id="email"[^>]*value="chair@venue\.example"/);
    const markup = await new UserAgent().authorize((await authorizationRequest(rp, { login_hint: '"><script>alert(1)</script>' })).url);
    expect(markup.html).not.toContain('<script>alert(1)</script>');
    expect(markup.html).toContain('&quot;&gt;&lt;script&gt;');
    const plain = await new UserAgent().authorize((await authorizationRequest(rp)).url);
    expect(plain.html).toMatch(/<input[^>]*id="email"[^>]*value=""/);
    const long = await fetch((await authorizationRequest(rp, { login_hint: 'x'.repeat(501) })).url, { redirect: 'manual' });
    expect(new URL(long.headers.get('location') ?? 'http://x').searchParams.get('error_description')).toBe('login_hint must be at most 500 characters');
  });
});

describe('a parameter sent empty is treated as omitted (RFC 6749 §3.1, §3.2)', () => {
  const codeOf = (page: { location: string | null }) => new URL(page.location ?? 'http://x').searchParams.get('code') ?? '';

  it('an empty request_uri, or request, is no request object: the request is answered as sent', async () => {
    for (const name of ['request_uri', 'request']) {
      const url = new URL((await authorizationRequest(rp)).url);
      url.searchParams.set(name, '');
      const page = await new UserAgent().authorize(url, person);
      expect(new URL(page.location ?? 'http://x').searchParams.get('code'), `${name}: ${page.location ?? page.html.slice(0, 200)}`).toBeTruthy();
    }
  });

  it('an empty nonce puts no nonce in the ID token', async () => {
    const request = await authorizationRequest(rp, { nonce: '' });
    const code = codeOf(await new UserAgent().authorize(request.url, person));
    const res = await token(new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: 'app', code_verifier: request.verifier }));
    const answer = (await res.json()) as { id_token: string };
    expect(res.status).toBe(200);
    expect(decodeJwt(answer.id_token)).not.toHaveProperty('nonce');
  });

  it('a confidential client without PKCE may send code_challenge_method and code_verifier empty', async () => {
    const { body: app } = await registerByHttp(server, await approvedRegistrationToken(server), { redirect_uris: [REDIRECT], client_name: 'Empty parameters' });
    const url = new URL((await authorizationRequest(rp)).url);
    url.searchParams.set('client_id', app.client_id);
    url.searchParams.delete('code_challenge');
    url.searchParams.set('code_challenge_method', '');
    const page = await new UserAgent().authorize(url, person);
    const code = codeOf(page);
    expect(code, page.location ?? page.html).not.toBe('');
    const basic = `Basic ${Buffer.from(`${app.client_id}:${app.client_secret}`).toString('base64')}`;
    const res = await token(new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: '', client_secret: '' }), { authorization: basic });
    expect(res.status, await res.clone().text()).toBe(200);
  });
});
