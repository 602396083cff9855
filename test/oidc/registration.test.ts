/**
 * Dynamic client registration (RFC 7591) and its management (RFC 7592), guarded by the
 * operators' one-use initial access tokens (`npm run admin -- oidc-client registration-token`).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteRegistration } from '../../server/oidc/registration.ts';
import type { Provider } from '../../server/oidc/provider.ts';
import { OidcRepository } from '../../server/oidc/repository.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { admin, approvedRegistrationToken, REDIRECT, registerByHttp, registrationToken } from './helpers.ts';

/** Admin commands start a process each. */
const LONG = 60_000;

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
}, LONG);
afterAll(() => server.close());

const manage = (uri: string, token: string, method: 'GET' | 'PUT' | 'DELETE', body?: unknown) =>
  fetch(uri, { method, headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) }, ...(body ? { body: JSON.stringify(body) } : {}) });

describe('POST /oidc/register', () => {
  it('refuses a missing, unknown or used initial access token with 401 invalid_token and a Bearer challenge', async () => {
    const missing = await registerByHttp(server, undefined, { redirect_uris: [REDIRECT] });
    expect(missing.status).toBe(401);
    expect(missing.body).toMatchObject({ error: 'invalid_token' });
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect((await registerByHttp(server, 'made-up', { redirect_uris: [REDIRECT] })).status).toBe(401);
    const token = await registrationToken(server);
    expect((await registerByHttp(server, token, { redirect_uris: [REDIRECT] })).status).toBe(201);
    expect((await registerByHttp(server, token, { redirect_uris: [REDIRECT] })).status).toBe(401);
  }, LONG);

  it('refuses javascript:, fragments, wildcards and plain http off the loopback interface, without using the token up', async () => {
    const token = await registrationToken(server);
    for (const uri of ['javascript:alert(1)', 'https://app.example/cb#x', 'https://*.example/cb', 'http://app.example/cb', 'not a url']) {
      const answer = await registerByHttp(server, token, { redirect_uris: [uri] });
      expect(answer.status, uri).toBe(400);
      expect(answer.body, uri).toMatchObject({ error: 'invalid_redirect_uri', error_description: expect.any(String) });
    }
    expect((await registerByHttp(server, token, { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'private_key_jwt' })).body).toMatchObject({ error: 'invalid_client_metadata' });
    expect((await registerByHttp(server, token, { redirect_uris: [REDIRECT], grant_types: ['implicit'] })).body).toMatchObject({ error: 'invalid_client_metadata' });
    // A sign-out address is other metadata (RFC 7591 §3.2.2), as node-oidc-provider answers; pages shown to people are http(s); contacts are addresses.
    expect((await registerByHttp(server, token, { redirect_uris: [REDIRECT], post_logout_redirect_uris: ['ftp://app.example/out'] })).body).toMatchObject({ error: 'invalid_client_metadata' });
    for (const page of [{ client_uri: 'javascript:alert(1)' }, { logo_uri: 'data:image/png;base64,AAAA' }, { contacts: ['not an address'] }]) {
      expect((await registerByHttp(server, token, { redirect_uris: [REDIRECT], ...page })).body, JSON.stringify(page)).toMatchObject({ error: 'invalid_client_metadata' });
    }
    // A device-grant client's redirect URIs receive nothing, so they prove no sector: pairwise needs a sector_identifier_uri.
    const pairwiseDevice = await registerByHttp(server, token, { redirect_uris: [REDIRECT], subject_type: 'pairwise', grant_types: ['urn:ietf:params:oauth:grant-type:device_code'], token_endpoint_auth_method: 'none' });
    expect(pairwiseDevice.body).toMatchObject({ error: 'invalid_client_metadata', error_description: expect.stringContaining('sector_identifier_uri') });
    // A native app's private-use scheme, and https anywhere: both fine; the token is still good.
    const native = await registerByHttp(server, token, { redirect_uris: ['com.example.reviews:/callback', 'https://app.example/cb'], application_type: 'native', token_endpoint_auth_method: 'none' });
    expect(native.status, JSON.stringify(native.body)).toBe(201);
    expect(native.body.client_secret).toBeUndefined();
  }, LONG);

  it('registers a client pending approval without --approved, and approved at once with it', async () => {
    const pending = await registerByHttp(server, await registrationToken(server), { redirect_uris: [REDIRECT], client_name: 'Waiting App' });
    const approved = await registerByHttp(server, await registrationToken(server, '--approved', '--expires-in', '600'), { redirect_uris: [REDIRECT], client_name: 'Approved App' });
    const list = await admin(server, 'oidc-client', 'list');
    expect(list).toContain(`${pending.body.client_id}\tpending\tWaiting App`);
    expect(list).toContain(`${approved.body.client_id}\tapproved\tApproved App`);
    const config = await client.discovery(new URL(server.url), pending.body.client_id, undefined, client.ClientSecretBasic(pending.body.client_secret ?? ''), { execute: [client.allowInsecureRequests] });
    const url = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' });
    const page = await fetch(url, { redirect: 'manual' });
    expect(page.status).toBe(400);
    expect(await page.text()).toContain('Client is not approved');
  }, LONG);
});

describe('what a registration may name', () => {
  it('is checked only once the initial access token is known to be live: without one, bad metadata is still 401', async () => {
    for (const bearer of [undefined, 'made-up']) {
      const answer = await registerByHttp(server, bearer, { redirect_uris: ['javascript:alert(1)'] });
      expect(answer.status).toBe(401);
      expect(answer.body).toMatchObject({ error: 'invalid_token' });
      expect(answer.headers.get('www-authenticate')).toMatch(/^Bearer /);
    }
  }, LONG);

  it('refuses a key set holding private key material, and keeps the token for a corrected request', async () => {
    const token = await approvedRegistrationToken(server);
    const key = { kty: 'RSA', kid: 'k1', n: 'sXch', e: 'AQAB' };
    for (const secret of [{ d: 'c2VjcmV0' }, { p: 'cA' }, { k: 'c2VjcmV0' }]) {
      const answer = await registerByHttp(server, token, { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [{ ...key, ...secret }] } });
      expect(answer.status, JSON.stringify(secret)).toBe(400);
      expect(answer.body).toMatchObject({ error: 'invalid_client_metadata', error_description: expect.stringContaining('private key material') });
    }
    expect((await registerByHttp(server, token, { redirect_uris: [REDIRECT] })).status).toBe(201);
  }, LONG);

  it('takes a back-channel logout address on the install\'s own network over plain http, and no public, link-local or named one', async () => {
    const token = await approvedRegistrationToken(server);
    for (const uri of ['http://app.example/logout', 'http://8.8.8.8/logout', 'http://10.0.0.5:8080/bc#x', 'javascript:alert(1)', 'http://169.254.169.254/latest', 'http://[fe80::1]/bc', 'http://metadata/bc', 'http://reviews-tool:8000/bc', 'http://localhost.evil.example/bc', 'http://user:pw@10.0.0.5/bc']) {
      const answer = await registerByHttp(server, token, { redirect_uris: [REDIRECT], backchannel_logout_uri: uri });
      expect(answer.status, uri).toBe(400);
      expect(answer.body, uri).toMatchObject({ error: 'invalid_client_metadata' });
    }
    for (const uri of ['http://10.0.0.5:8080/bc', 'http://192.168.1.20/bc', 'http://172.20.0.3/bc', 'http://[fd00::5]/bc', 'https://reviews-tool:8000/bc', 'https://app.example/bc']) {
      const answer = await registerByHttp(server, await approvedRegistrationToken(server), { redirect_uris: [REDIRECT], backchannel_logout_uri: uri });
      expect(answer.status, `${uri}: ${JSON.stringify(answer.body)}`).toBe(201);
      expect(answer.body.backchannel_logout_uri).toBe(uri);
    }
  }, LONG);
});

describe('a registration without a live token', () => {
  it('never makes the service fetch the sector document it names', async () => {
    let fetched = 0;
    const sector = createServer((_req, res) => {
      fetched += 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify([REDIRECT]));
    });
    await new Promise<void>((resolve) => sector.listen(0, '127.0.0.1', resolve));
    const metadata = { redirect_uris: [REDIRECT], subject_type: 'pairwise', sector_identifier_uri: `http://127.0.0.1:${(sector.address() as AddressInfo).port}/s.json` };
    try {
      expect((await registerByHttp(server, undefined, metadata)).status).toBe(401);
      expect((await registerByHttp(server, 'made-up', metadata)).status).toBe(401);
      expect(fetched).toBe(0);
      expect((await registerByHttp(server, await registrationToken(server), metadata)).status).toBe(201);
      expect(fetched).toBe(1);
    } finally {
      await new Promise((resolve) => sector.close(resolve));
    }
  }, LONG);
});

describe('metadata sent as null', () => {
  it('is taken as not sent (some libraries serialise what they leave out so)', async () => {
    const answer = await registerByHttp(server, await registrationToken(server), { redirect_uris: [REDIRECT], client_name: null, jwks_uri: null, scope: null, contacts: null });
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    expect(answer.body).toMatchObject({ client_id: expect.any(String), token_endpoint_auth_method: 'client_secret_basic', scope: expect.stringContaining('openid') });
    expect(answer.body.client_name).toBeUndefined();
  }, LONG);
});

describe('/oidc/register/{client_id} (RFC 7592)', () => {
  it('reads, replaces (rotating the registration access token) and deletes a registration', async () => {
    const { body: app } = await registerByHttp(server, await registrationToken(server, '--approved'), { redirect_uris: [REDIRECT], client_name: 'First Name', contacts: ['chairs@venue.example'] });
    const read = await manage(app.registration_client_uri, app.registration_access_token, 'GET');
    expect(read.status).toBe(200);
    const current = (await read.json()) as Record<string, unknown>;
    expect(current).toMatchObject({ client_id: app.client_id, client_name: 'First Name', contacts: ['chairs@venue.example'], redirect_uris: [REDIRECT] });
    expect(current.client_secret).toBeUndefined();

    const { registration_access_token: _t, registration_client_uri: _u, client_id_issued_at: _i, client_secret_expires_at: _e, ...rest } = current;
    const sentServerField = await manage(app.registration_client_uri, app.registration_access_token, 'PUT', { ...current, client_name: 'x' });
    expect(sentServerField.status).toBe(400);
    const updated = await manage(app.registration_client_uri, app.registration_access_token, 'PUT', { ...rest, client_name: 'Second Name', redirect_uris: ['https://tool.example/cb'] });
    expect(updated.status).toBe(200);
    const answer = (await updated.json()) as Record<string, string>;
    expect(answer).toMatchObject({ client_name: 'Second Name', redirect_uris: ['https://tool.example/cb'], registration_access_token: expect.any(String) });
    expect(answer.registration_access_token).not.toBe(app.registration_access_token);
    // The old registration access token no longer works; the new one does.
    expect((await manage(app.registration_client_uri, app.registration_access_token, 'GET')).status).toBe(401);
    const newToken = answer.registration_access_token ?? '';

    const deleted = await manage(app.registration_client_uri, newToken, 'DELETE');
    expect(deleted.status).toBe(204);
    expect((await manage(app.registration_client_uri, newToken, 'GET')).status).toBe(401);
    const tokenAnswer = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${app.client_id}:${app.client_secret}`).toString('base64')}` },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT }),
    });
    expect(tokenAnswer.status).toBe(401);
    expect(await tokenAnswer.json()).toMatchObject({ error: 'invalid_client' });
  }, LONG);

  it('answers a read with the registration access token it was sent (RFC 7592 §3), without rotating it', async () => {
    const { body: app } = await registerByHttp(server, await approvedRegistrationToken(server), { redirect_uris: [REDIRECT], client_name: 'Reader' });
    for (const attempt of [1, 2]) {
      const read = await manage(app.registration_client_uri, app.registration_access_token, 'GET');
      expect(read.status, `read ${attempt}`).toBe(200);
      expect(await read.json()).toMatchObject({ client_id: app.client_id, registration_access_token: app.registration_access_token, registration_client_uri: app.registration_client_uri });
    }
    // After an update, a read answers the token the update answered.
    const current = (await (await manage(app.registration_client_uri, app.registration_access_token, 'GET')).json()) as Record<string, unknown>;
    const { registration_access_token: _t, registration_client_uri: _u, client_id_issued_at: _i, client_secret_expires_at: _e, ...rest } = current;
    const updated = (await (await manage(app.registration_client_uri, app.registration_access_token, 'PUT', rest)).json()) as { registration_access_token: string };
    const reread = await manage(app.registration_client_uri, updated.registration_access_token, 'GET');
    expect(await reread.json()).toMatchObject({ registration_access_token: updated.registration_access_token });
  }, LONG);

  it('does not delete a client whose registration access token an update rotated after the DELETE checked it: 401', async () => {
    const { body: app } = await registerByHttp(server, await approvedRegistrationToken(server), { redirect_uris: [REDIRECT], client_name: 'Raced' });
    const current = (await (await manage(app.registration_client_uri, app.registration_access_token, 'GET')).json()) as Record<string, unknown>;
    const { registration_access_token: _t, registration_client_uri: _u, client_id_issued_at: _i, client_secret_expires_at: _e, ...rest } = current;
    const real = new OidcRepository(server.service.db);
    // The DELETE reads the client (its token is still the one sent), and then the PUT rotates it.
    const repo = new Proxy(real, {
      get(target, name) {
        if (name !== 'findClient') {
          const value = Reflect.get(target, name, target) as unknown;
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
        }
        return async (id: string) => {
          const found = await target.findClient(id);
          expect((await manage(app.registration_client_uri, app.registration_access_token, 'PUT', rest)).status).toBe(200);
          return found;
        };
      },
    });
    const provider = { repo, clients: { forget: () => undefined }, now: Date.now, issuer: server.url } as unknown as Provider;
    await expect(deleteRegistration(provider, app.client_id, app.registration_access_token)).rejects.toMatchObject({ error: 'invalid_token', status: 401 });
    expect(await real.findClient(app.client_id)).not.toBeNull();
  }, LONG);

  it('refuses another client’s registration access token', async () => {
    const token = await registrationToken(server, '--approved');
    const { body: one } = await registerByHttp(server, token, { redirect_uris: [REDIRECT] });
    const { body: two } = await registerByHttp(server, await registrationToken(server, '--approved'), { redirect_uris: [REDIRECT] });
    expect((await manage(one.registration_client_uri, two.registration_access_token, 'GET')).status).toBe(401);
    expect((await manage(one.registration_client_uri, two.registration_access_token, 'DELETE')).status).toBe(401);
    expect((await manage(one.registration_client_uri, one.registration_access_token, 'GET')).status).toBe(200);
  }, LONG);
});

describe('an approval and the updates after it (RFC 7592)', () => {
  const oidc = () => server.service.services.oidc;
  const statusOf = async (id: string) => (await oidc().listClients()).find((c) => c.id === id)?.status;
  /** Registers with an initial access token (approved at once or not); the registration answer. */
  const registered = async (approved: boolean, metadata: Record<string, unknown>) => {
    const { token } = await oidc().issueRegistrationToken({ approved, expiresInSeconds: 600 });
    const answer = await registerByHttp(server, token, metadata);
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    return { id: answer.body.client_id, uri: answer.body.registration_client_uri, token: answer.body.registration_access_token };
  };
  /** Reads the registration, replaces it with `changes` applied; keeps the new registration access token. */
  const update = async (app: { uri: string; token: string }, changes: Record<string, unknown>) => {
    const current = (await (await manage(app.uri, app.token, 'GET')).json()) as Record<string, unknown>;
    const { registration_access_token: _t, registration_client_uri: _u, client_id_issued_at: _i, client_secret_expires_at: _e, ...rest } = current;
    const answer = await manage(app.uri, app.token, 'PUT', { ...rest, ...changes });
    expect(answer.status, JSON.stringify(changes)).toBe(200);
    app.token = ((await answer.json()) as { registration_access_token: string }).registration_access_token;
  };
  const OTHER = 'https://elsewhere.example/cb';

  it("an operator's approval covers what they were shown: changing it asks them again, keys, contacts and reordering do not", async () => {
    const app = await registered(false, { redirect_uris: [REDIRECT, 'https://tool.example/cb'], client_name: 'Reviewed Tool', scope: 'openid profile', contacts: ['a@tool.example'] });
    expect(await statusOf(app.id)).toBe('pending');
    await oidc().setClientStatus(app.id, 'approved');

    await update(app, { contacts: ['b@tool.example'], client_uri: 'https://tool.example', redirect_uris: ['https://tool.example/cb', REDIRECT], scope: 'profile openid' });
    expect(await statusOf(app.id)).toBe('approved');
    const { publicKey } = await generateKeyPair('RS256', { extractable: true });
    await update(app, { token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [await exportJWK(publicKey)] } });
    expect(await statusOf(app.id)).toBe('pending');
    await oidc().setClientStatus(app.id, 'approved');
    const { publicKey: next } = await generateKeyPair('RS256', { extractable: true });
    await update(app, { jwks: { keys: [await exportJWK(next)] } });
    expect(await statusOf(app.id), 'a new key is not a new application').toBe('approved');

    await update(app, { redirect_uris: [REDIRECT, 'https://tool.example/cb', OTHER] });
    expect(await statusOf(app.id)).toBe('pending');
    // Until approved again, it signs nobody in: to the new address or the reviewed one.
    for (const redirect of [OTHER, REDIRECT]) {
      const url = new URL(`${server.url}/oidc/authorize`);
      url.search = new URLSearchParams({ client_id: app.id, response_type: 'code', redirect_uri: redirect, scope: 'openid', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' }).toString();
      const page = await fetch(url, { redirect: 'manual' });
      expect(page.status, redirect).toBe(400);
      expect(page.headers.get('location')).toBeNull();
    }
    await oidc().setClientStatus(app.id, 'approved');
    for (const change of [{ scope: 'openid profile email' }, { client_name: 'Someone Else' }, { subject_type: 'pairwise', redirect_uris: [REDIRECT] }, { post_logout_redirect_uris: [OTHER] }]) {
      await update(app, change);
      expect(await statusOf(app.id), JSON.stringify(change)).toBe('pending');
      await oidc().setClientStatus(app.id, 'approved');
    }
    // A rejected client stays rejected whatever it changes.
    await oidc().setClientStatus(app.id, 'rejected');
    await update(app, { client_name: 'Reviewed Tool, again' });
    expect(await statusOf(app.id)).toBe('rejected');
  }, LONG);

  it.each<[string, Record<string, unknown>, 'pending' | 'approved']>([
    ['client_name', { client_name: 'Another Name' }, 'pending'],
    ['redirect_uris', { redirect_uris: [OTHER] }, 'pending'],
    ['scope', { scope: 'openid profile email' }, 'pending'],
    ['grant_types', { grant_types: ['authorization_code', 'refresh_token'] }, 'pending'],
    ['token_endpoint_auth_method', { token_endpoint_auth_method: 'client_secret_post' }, 'pending'],
    ['post_logout_redirect_uris', { post_logout_redirect_uris: [OTHER] }, 'pending'],
    ['backchannel_logout_uri', { backchannel_logout_uri: 'https://tool.example/logout' }, 'pending'],
    ['backchannel_logout_session_required', { backchannel_logout_session_required: true }, 'pending'],
    ['subject_type', { subject_type: 'pairwise' }, 'pending'],
    ['refresh_token_absolute_seconds', { refresh_token_absolute_seconds: 366 * 24 * 3600 }, 'pending'],
    ['refresh_token_idle_seconds', { refresh_token_idle_seconds: 366 * 24 * 3600 }, 'pending'],
    ['contacts', { contacts: ['b@tool.example'] }, 'approved'],
    ['client_uri', { client_uri: 'https://tool.example' }, 'approved'],
    ['logo_uri', { logo_uri: 'https://tool.example/logo.png' }, 'approved'],
    ['policy_uri', { policy_uri: 'https://tool.example/policy' }, 'approved'],
    ['tos_uri', { tos_uri: 'https://tool.example/terms' }, 'approved'],
  ])('an update of %s alone (%j) leaves an operator-approved client %s', async (_field, change, status) => {
    const app = await registered(false, { redirect_uris: [REDIRECT], client_name: 'One Change', scope: 'openid profile' });
    await oidc().setClientStatus(app.id, 'approved');
    await update(app, change);
    expect(await statusOf(app.id)).toBe(status);
  }, LONG);

  it('two updates with one registration access token: one is answered, the other finds it rotated', async () => {
    const app = await registered(true, { redirect_uris: [REDIRECT], client_name: 'Twice' });
    const current = (await (await manage(app.uri, app.token, 'GET')).json()) as Record<string, unknown>;
    const { registration_access_token: _t, registration_client_uri: _u, client_id_issued_at: _i, client_secret_expires_at: _e, ...rest } = current;
    const answers = await Promise.all(['First', 'Second'].map((name) => manage(app.uri, app.token, 'PUT', { ...rest, client_name: name })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 401]);
  }, LONG);

  it('a client its --approved token approved keeps its approval through updates, until an operator decides on it', async () => {
    const app = await registered(true, { redirect_uris: [REDIRECT], client_name: 'Trusted Tool' });
    await update(app, { redirect_uris: [OTHER], client_name: 'Trusted Tool 2', scope: 'openid email' });
    expect(await statusOf(app.id)).toBe('approved');
    await oidc().setClientStatus(app.id, 'approved');
    await update(app, { redirect_uris: [REDIRECT] });
    expect(await statusOf(app.id), 'the approval is now the operator’s').toBe('pending');
  }, LONG);
});

describe('client secrets', () => {
  it('rotate with an overlap: the old secret works until it ends, the new one from the start', async () => {
    const { body: app } = await registerByHttp(server, await registrationToken(server, '--approved'), { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_post' });
    /** The status of an introspection with `secret`: 200 when it is a live secret of the client, 401 otherwise. */
    const status = async (secret: string) =>
      (
        await fetch(`${server.url}/oidc/introspect`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ token: 'x', client_id: app.client_id, client_secret: secret }),
        })
      ).status;
    const overlapping = (await admin(server, 'oidc-client', 'rotate-secret', app.client_id)).trim().split('\n').at(-1) ?? '';
    expect(await status(overlapping)).toBe(200);
    expect(await status(app.client_secret ?? '')).toBe(200);
    const immediate = (await admin(server, 'oidc-client', 'rotate-secret', app.client_id, '--overlap', '0')).trim().split('\n').at(-1) ?? '';
    expect(await status(immediate)).toBe(200);
    expect(await status(overlapping)).toBe(401);
    expect(await status(app.client_secret ?? '')).toBe(401);
    // The database holds hashes only.
    const stored = await server.service.db('oidc_client_secrets').where({ client_id: app.client_id });
    expect(JSON.stringify(stored)).not.toContain(immediate);
  }, LONG);
});
