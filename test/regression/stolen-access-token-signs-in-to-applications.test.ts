/**
 * Found by an attack review of issue 12: with nothing but a person's access token (a bearer
 * header), `GET /oidc/authorize` took the token for the person's session, and
 * `POST /oidc/authorize/consent {interactionId, approved: true}` consented for them: the code
 * then gave the thief an application's tokens and an ID token as the person, which outlived
 * both the stolen token and the person's logout. Signing in to an application now takes the
 * browser session (the cookie), never a bearer token. (A bearer token may ask what a request
 * needs, `POST /oidc/authorize/confirm`, as the platform's web client does from its server: it is
 * told, and gets no code.)
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SessionsRepository } from '../../server/accounts/repository/sessions.ts';
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

  it('cannot consent to a sign-in request, nor complete one by confirming it; the request stays unanswered', async () => {
    const request = await authorizationRequest(rp);
    const cookie = cookieHeader(victim);
    const res = await fetch(request.url, { redirect: 'manual', headers: { cookie } });
    const interactionId = new URL(res.headers.get('location') ?? '', server.url).searchParams.get('interaction');
    expect(interactionId).toBeTruthy();
    const consent = await thief.post('/oidc/authorize/consent', { interactionId, approved: true });
    expect(consent.status).toBe(403);
    expect(consent.body).toMatchObject({ status: 403, name: 'ForbiddenError' });
    // A web application's server asks with the token it read from the cookie (the platform's web
    // client does): it is told what is asked, and nothing more.
    const confirm = await thief.post('/oidc/authorize/confirm', { interactionId });
    expect(confirm.body).toEqual({ client: { clientName: 'App app' }, scopes: ['openid', 'profile', 'email'].map((scope) => ({ scope, description: expect.any(String) })) });
    // The person, in their browser, still can.
    expect((await victim.post('/oidc/authorize/consent', { interactionId, approved: true })).status).toBe(200);
  });

  it('gets no code by confirming a request to an application the person consented to before', async () => {
    // The person's consent is given (above); a request the thief starts with the token is then
    // one this service would answer at once for the person's browser, with a code.
    const request = await authorizationRequest(rp);
    const own = await fetch(request.url, { redirect: 'manual', headers: { cookie: cookieHeader(victim) } });
    expect(own.headers.get('location')).toMatch(/\/callback\?code=/);
    const started = await fetch((await authorizationRequest(rp)).url, { redirect: 'manual' });
    const interactionId = new URL(started.headers.get('location') ?? '', server.url).searchParams.get('interaction');
    expect(interactionId).toBeTruthy();
    const confirm = await thief.post('/oidc/authorize/confirm', { interactionId });
    expect(confirm.status).toBe(200);
    expect(confirm.body).toEqual({ client: { clientName: 'App app' }, scopes: ['openid', 'profile', 'email'].map((scope) => ({ scope, description: expect.any(String) })) });
    expect(JSON.stringify(confirm.body)).not.toContain('code=');
    expect((await thief.post('/oidc/authorize/consent', { interactionId, approved: true })).status).toBe(403);
  });

  it('is no browser session sent as a cookie either: no code, no consent, and the authorization asks for a sign-in', async () => {
    // Found by a review of the web client's sign-in: the check was whether the token came in a
    // header, and a script puts the same token in a Cookie header as easily.
    const asCookie = new Client(server.url);
    asCookie.jar.set('service.accessToken', thief.bearer!);
    const started = await fetch((await authorizationRequest(rp)).url, { redirect: 'manual', headers: { cookie: cookieHeader(asCookie) } });
    expect(started.status).toBe(303);
    expect(new URL(started.headers.get('location') ?? '', server.url).pathname).toBe('/oidc/login');
    const interactionId = new URL(started.headers.get('location') ?? '', server.url).searchParams.get('interaction');
    expect((await asCookie.post('/oidc/authorize/consent', { interactionId, approved: true })).status).toBe(403);
    const confirm = await asCookie.post('/oidc/authorize/confirm', { interactionId });
    expect(JSON.stringify(confirm.body)).not.toContain('code=');
    const page = await fetch(`${server.url}/oidc/consent?interaction=${interactionId}`, { redirect: 'manual', headers: { cookie: cookieHeader(asCookie) } });
    expect(page.status).toBe(303);
  });

  it('is told from a database that fails: that is no signed-out browser', async () => {
    const cookies = [...victim.jar].map(([name, value]) => [name, value] as const);
    const cookie = (name: string) => cookies.find(([n]) => n === name)?.[1];
    const sessions = server.service.services.sessions;
    expect(await sessions.browserViewer(cookie('service.accessToken'), cookie('service.refreshToken'))).not.toBeNull();
    expect(await sessions.browserViewer(cookie('service.accessToken'), undefined)).toBeNull();
    const failing = vi.spyOn(SessionsRepository.prototype, 'findWithProfile').mockRejectedValueOnce(new Error('the database is gone'));
    await expect(sessions.browserViewer(cookie('service.accessToken'), cookie('service.refreshToken'))).rejects.toThrow('the database is gone');
    failing.mockRestore();
  });
});
