/**
 * Defect (issue 12, item 14, the PKCE part): the token endpoint accepted any `code_verifier`
 * whose SHA-256 matched the challenge, so a client could use a 1-character verifier (or one
 * with characters outside the RFC 7636 alphabet), and PKCE protected nothing. A verifier must
 * be 43 to 128 characters of [A-Za-z0-9-._~] (RFC 7636 §4.1): otherwise `invalid_request`.
 * The S256 challenge on /oidc/authorize must be what S256 gives: 43 base64url characters.
 */
import { createHash } from 'node:crypto';
import type * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { authorizationRequest, REDIRECT, registerClient, relyingParty, UserAgent } from '../oidc/helpers.ts';

let server: TestServer;
let rp: client.Configuration;
let person: { email: string; password: string };
const agent = new UserAgent();

const challengeOf = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/** A code whose challenge is made from `verifier`, whatever it is. */
async function codeFor(verifier: string): Promise<string> {
  const request = await authorizationRequest(rp, { code_challenge: challengeOf(verifier) });
  const page = await agent.authorize(request.url, person);
  const code = new URL(page.location ?? 'http://x').searchParams.get('code');
  expect(code, page.html.slice(0, 200)).toBeTruthy();
  return code as string;
}

const redeem = async (code: string, verifier: string) => {
  const res = await fetch(`${server.url}/oidc/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: 'app', code_verifier: verifier }),
  });
  return { status: res.status, body: await res.json() };
};

beforeAll(async () => {
  server = await startServer();
  await registerClient(server, 'app');
  rp = await relyingParty(server, 'app');
  person = { email: (await createActiveUser(server)).email, password: PASSWORD };
}, 60_000);
afterAll(async () => {
  await server.close();
});

describe('a code_verifier outside RFC 7636', () => {
  it.each([
    ['one character', 'a'],
    ['42 characters', 'a'.repeat(42)],
    ['129 characters', 'a'.repeat(129)],
    ['characters outside the alphabet', `${'a'.repeat(42)}+`],
    ['a space', `${'a'.repeat(42)} `],
    ['non-ASCII', `${'a'.repeat(42)}é`],
  ])('is refused even when its hash matches: %s', async (_name, verifier) => {
    const res = await redeem(await codeFor(verifier), verifier);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'invalid_request', error_description: 'code_verifier must be 43 to 128 characters of A-Z, a-z, 0-9, -, ., _ and ~' });
  });

  it('at the limits, 43 and 128 characters of the alphabet are accepted', async () => {
    for (const verifier of [`${'a'.repeat(39)}-._~`, 'Z9'.repeat(64)]) expect((await redeem(await codeFor(verifier), verifier)).status).toBe(200);
  });

  it('a missing one is invalid_request; a well-formed wrong one is invalid_grant', async () => {
    const verifier = 'v'.repeat(43);
    const code = await codeFor(verifier);
    const missing = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: 'app' }),
    });
    expect(await missing.json()).toEqual({ error: 'invalid_request', error_description: 'code_verifier is required' });
    expect((await redeem(code, 'w'.repeat(43))).body).toEqual({ error: 'invalid_grant', error_description: 'Invalid code_verifier' });
  });
});

describe('a code_challenge that S256 cannot have made', () => {
  it.each([
    ['44 characters', 'a'.repeat(44)],
    ['128 characters', 'a'.repeat(128)],
    ['padding', `${'a'.repeat(42)}=`],
    ['a dot', `${'a'.repeat(42)}.`],
  ])('is refused on /oidc/authorize: %s', async (_name, challenge) => {
    const request = await authorizationRequest(rp, { code_challenge: challenge });
    const res = await fetch(request.url, { redirect: 'manual' });
    const location = new URL(res.headers.get('location') ?? 'http://x');
    expect(location.searchParams.get('error')).toBe('invalid_request');
    expect(location.searchParams.get('error_description')).toBe('code_challenge must be the 43-character base64url SHA-256 of the code verifier');
  });
});
