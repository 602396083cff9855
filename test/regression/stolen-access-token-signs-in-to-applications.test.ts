/**
 * Found by an attack review of issue 12: with nothing but a person's access token (a bearer
 * header), `GET /oidc/authorize` took the token for the person's session, and
 * `POST /oidc/authorize/consent {interactionId, approved: true}` consented for them: the code
 * then gave the thief an application's tokens and an ID token as the person, which outlived
 * both the stolen token and the person's logout. Signing in to an application now takes the
 * browser session (the cookie), never a bearer token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type * as client from 'openid-client';
import { cookieHeader } from '../helpers/cookies.ts';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';
import { authorizationRequest, registerClient, relyingParty } from '../oidc/helpers.ts';

let server: TestServer;
let rp: client.Configuration;
let thief: Client;
let victim: Client;

beforeAll(async () => {
  server = await startServer();
  await registerClient(server, 'app');
  rp = await relyingParty(server, 'app');
  const person = await createActiveUser(server);
  const session = await loggedIn(server, person.email);
  victim = session.client;
  thief = new Client(server.url);
  thief.bearer = session.token;
}, 60_000);
afterAll(() => server.close());

describe('an access token alone, at the sign-in provider', () => {
  it('is not taken for the person’s session: the authorization asks for a sign-in', async () => {
    const request = await authorizationRequest(rp);
    const res = await fetch(request.url, { redirect: 'manual', headers: { authorization: `Bearer ${thief.bearer}` } });
    expect(res.status).toBe(303);
    expect(new URL(res.headers.get('location') ?? '', server.url).pathname).toBe('/oidc/login');
  });

  it('cannot confirm or consent to a sign-in request, which stays unanswered', async () => {
    const request = await authorizationRequest(rp);
    const cookie = cookieHeader(victim);
    const res = await fetch(request.url, { redirect: 'manual', headers: { cookie } });
    const interactionId = new URL(res.headers.get('location') ?? '', server.url).searchParams.get('interaction');
    expect(interactionId).toBeTruthy();
    for (const [path, body] of [
      ['/oidc/authorize/confirm', { interactionId }],
      ['/oidc/authorize/consent', { interactionId, approved: true }],
    ] as const) {
      const answer = await thief.post(path, body);
      expect(answer.status, path).toBe(403);
      expect(answer.body, path).toMatchObject({ status: 403, name: 'ForbiddenError' });
    }
    // The person, in their browser, still can.
    expect((await victim.post('/oidc/authorize/consent', { interactionId, approved: true })).status).toBe(200);
  });
});
