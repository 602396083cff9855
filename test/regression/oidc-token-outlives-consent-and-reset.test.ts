/**
 * Defect (issue 12, item 12): applications kept access after the person changed their mind. An
 * OIDC access token still answered on `/oidc/userinfo` after its consent was withdrawn
 * (`DELETE /oidc/consents/{clientId}`), after a password reset and after a logout of every
 * device; a code issued before those could still be redeemed for a fresh token. Withdrawing a
 * consent ends the person's tokens at that application; a reset or logout-all (anything that
 * moves the profile's `tokenVersion`) ends every application's.
 */
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { lastMailTo } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';
import { authorizationRequest, REDIRECT, registerClient, relyingParty, UserAgent } from '../oidc/helpers.ts';

let server: TestServer;
const rps: Record<string, client.Configuration> = {};

beforeAll(async () => {
  server = await startServer();
  for (const id of ['app-one', 'app-two']) {
    await registerClient(server, id);
    rps[id] = await relyingParty(server, id);
  }
}, 60_000);
afterAll(async () => {
  await server.close();
});

type Person = { id: string; email: string; password: string };

/** A code from the pages, not yet redeemed. */
async function code(person: Person, app: string, agent: UserAgent) {
  const request = await authorizationRequest(rps[app] as client.Configuration);
  const page = await agent.authorize(request.url, person);
  expect(page.location, page.html.slice(0, 300)).toMatch(/^http:\/\/127\.0\.0\.1:9\/callback\?code=/);
  return { code: new URL(page.location ?? '').searchParams.get('code') ?? '', verifier: request.verifier, app };
}

const redeem = async (c: { code: string; verifier: string; app: string }) => {
  const res = await fetch(`${server.url}/oidc/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'authorization_code', code: c.code, redirect_uri: REDIRECT, client_id: c.app, code_verifier: c.verifier }),
  });
  return { status: res.status, body: (await res.json()) as { access_token?: string; error?: string } };
};

const userinfo = async (token: string | undefined) => (await fetch(`${server.url}/oidc/userinfo`, { headers: { authorization: `Bearer ${token}` } })).status;

/** A person signed in to both applications: a live token at each, and an unredeemed code at each. */
async function signedInEverywhere(): Promise<{ person: Person; tokens: Record<string, string>; codes: Array<Awaited<ReturnType<typeof code>>> }> {
  const person = { ...(await createActiveUser(server)), password: PASSWORD };
  const agent = new UserAgent();
  const tokens: Record<string, string> = {};
  for (const app of ['app-one', 'app-two']) {
    const redeemed = await redeem(await code(person, app, agent));
    expect(redeemed.status).toBe(200);
    tokens[app] = redeemed.body.access_token as string;
    expect(await userinfo(tokens[app])).toBe(200);
  }
  const codes = [await code(person, 'app-one', agent), await code(person, 'app-two', agent)];
  return { person, tokens, codes };
}

describe('OIDC access ends when the person changes their mind', () => {
  it('withdrawing a consent ends the tokens and codes at that application, and only there', async () => {
    const { person, tokens, codes } = await signedInEverywhere();
    const { client: api } = await loggedIn(server, person.email);
    expect((await api.request('DELETE', '/oidc/consents/app-one')).status).toBe(200);
    expect(await userinfo(tokens['app-one'])).toBe(401);
    expect((await redeem(codes[0] as (typeof codes)[0])).body).toEqual({ error: 'invalid_grant', error_description: 'Invalid or expired authorization code' });
    expect(await userinfo(tokens['app-two'])).toBe(200);
    expect((await redeem(codes[1] as (typeof codes)[0])).status).toBe(200);
  });

  it('a consent given again does not bring the old tokens back', async () => {
    const { person, tokens } = await signedInEverywhere();
    const { client: api } = await loggedIn(server, person.email);
    expect((await api.request('DELETE', '/oidc/consents/app-one')).status).toBe(200);
    expect((await redeem(await code(person, 'app-one', new UserAgent()))).status).toBe(200);
    expect(await userinfo(tokens['app-one'])).toBe(401);
  });

  it('logging out of every device ends every application\'s tokens and codes', async () => {
    const { person, tokens, codes } = await signedInEverywhere();
    const { client: api } = await loggedIn(server, person.email);
    expect((await api.post('/logout-all-devices')).status).toBe(200);
    for (const app of ['app-one', 'app-two']) expect(await userinfo(tokens[app]), app).toBe(401);
    for (const c of codes) expect((await redeem(c)).body.error, c.app).toBe('invalid_grant');
  });

  it('a password reset ends every application\'s tokens and codes', async () => {
    const { person, tokens, codes } = await signedInEverywhere();
    expect((await new Client(server.url).post('/resettable', { id: person.email, token: 'dev-ok' })).status).toBe(200);
    const link = /token=([\w-]+)/.exec((await lastMailTo(server.dataDir, person.email)).text)?.[1];
    expect((await new Client(server.url).request('PUT', `/reset/${link}`, { password: 'Reset-Ends-Apps1' })).status).toBe(200);
    for (const app of ['app-one', 'app-two']) expect(await userinfo(tokens[app]), app).toBe(401);
    for (const c of codes) expect((await redeem(c)).body.error, c.app).toBe('invalid_grant');
  });
});
