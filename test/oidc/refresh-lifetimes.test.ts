/**
 * A refresh-token family's lifetimes, set per client at registration (issue 26): unused for
 * longer than its idle lifetime, a refresh token is refused; and however often it is rotated, a
 * family ends at its absolute lifetime. The server's clock is moved forward, never slept on.
 */
import * as client from 'openid-client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TestClock } from '../helpers/clock.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { approvedRegistrationToken, REDIRECT, registerByHttp, UserAgent } from './helpers.ts';

const LONG = 60_000;
const clock = new TestClock();
let server: TestServer;
let person: { email: string; password: string };

beforeAll(async () => {
  server = await startServer({}, undefined, { now: clock.now });
  person = { email: (await createActiveUser(server)).email, password: PASSWORD };
}, LONG);
afterAll(() => server.close());

/** A refresh as a confidential client sends it (no ID token check: the server's clock runs ahead of this one's). */
async function refresh(app: { client_id: string; client_secret?: string }, token: string) {
  const res = await fetch(`${server.url}/oidc/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${app.client_id}:${app.client_secret}`).toString('base64')}` },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token }),
  });
  return { status: res.status, body: (await res.json()) as { refresh_token?: string; error?: string } };
}

it('ends a family unused for longer than its idle lifetime, and any family at its absolute lifetime', async () => {
  const registration = await registerByHttp(server, await approvedRegistrationToken(server), {
    redirect_uris: [REDIRECT],
    grant_types: ['authorization_code', 'refresh_token'],
    scope: 'openid offline_access',
    refresh_token_idle_seconds: 60,
    refresh_token_absolute_seconds: 150,
  });
  expect(registration.status, JSON.stringify(registration.body)).toBe(201);
  const app = registration.body;
  const config = await client.discovery(new URL(server.url), app.client_id, undefined, client.ClientSecretBasic(app.client_secret ?? ''), { execute: [client.allowInsecureRequests] });
  const signIn = async () => {
    const verifier = client.randomPKCECodeVerifier();
    const url = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid offline_access', prompt: 'consent', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    const page = await new UserAgent().authorize(url, person);
    const tokens = await client.authorizationCodeGrant(config, new URL(page.location ?? ''), { pkceCodeVerifier: verifier });
    expect(tokens.refresh_token).toEqual(expect.any(String));
    return tokens.refresh_token ?? '';
  };

  // Idle: used within 60 s it rotates; left 61 s, it is refused.
  let token = await signIn();
  clock.advance(50_000);
  const rotated = await refresh(app, token);
  expect(rotated.status).toBe(200);
  token = rotated.body.refresh_token ?? '';
  clock.advance(61_000);
  expect(await refresh(app, token)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });

  // Absolute: rotated every 50 s, the family still ends 150 s after its sign-in.
  token = await signIn();
  for (let i = 0; i < 2; i++) {
    clock.advance(50_000);
    const next = await refresh(app, token);
    expect(next.status, `rotation ${i}`).toBe(200);
    token = next.body.refresh_token ?? '';
  }
  clock.advance(51_000);
  expect(await refresh(app, token)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
}, LONG);
