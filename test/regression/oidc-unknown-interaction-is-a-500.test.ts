/**
 * Defect (issue 12, item 7, the OIDC part): `POST /oidc/authorize/confirm` and
 * `POST /oidc/authorize/consent` with an unknown `interactionId` answered 500: the service threw
 * the protocol error meant for the HTML pages, which the JSON procedures did not know. The same
 * for an expired or already answered interaction. Each is now a 404 with the Error body. Also:
 * an interaction someone signed in to on the login page can no longer be answered by another
 * person (it would have issued that other person's code to a request this browser started).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cookieHeader } from '../helpers/cookies.ts';
import type { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';
import { authorizationRequest, registerClient, relyingParty, UserAgent } from '../oidc/helpers.ts';
import type * as client from 'openid-client';

let server: TestServer;
let rp: client.Configuration;
let api: Client;

const GONE = {
  status: 404,
  name: 'NotFoundError',
  message: 'This sign-in request has expired or was already answered. Please start again from the application.',
  details: { path: 'interactionId', reqId: expect.any(String) },
};

/** A stored interaction waiting for the signed-in `api` user's consent. */
async function pendingInteraction(): Promise<string> {
  const request = await authorizationRequest(rp);
  const res = await fetch(request.url, { redirect: 'manual', headers: { cookie: cookieHeader(api) } });
  const id = new URL(res.headers.get('location') ?? '').searchParams.get('interaction');
  expect(id).toBeTruthy();
  return id as string;
}

beforeAll(async () => {
  server = await startServer();
  await registerClient(server, 'app');
  rp = await relyingParty(server, 'app');
  api = (await loggedIn(server, (await createActiveUser(server)).email)).client;
}, 60_000);
afterAll(async () => {
  await server.close();
});

describe('the JSON interaction endpoints', () => {
  it('answer an unknown interactionId with a 404 Error body, not a 500', async () => {
    expect((await api.post('/oidc/authorize/confirm', { interactionId: 'no-such-interaction' })).body).toEqual(GONE);
    for (const approved of [true, false]) {
      const res = await api.post('/oidc/authorize/consent', { interactionId: 'no-such-interaction', approved });
      expect(res.status).toBe(404);
      expect(res.body).toEqual(GONE);
    }
    const long = await api.post('/oidc/authorize/confirm', { interactionId: 'x'.repeat(65) });
    expect(long.body).toMatchObject({ status: 400, name: 'ValidationError', details: { path: 'interactionId' } });
  });

  it('answer an expired or already answered interaction with the same 404', async () => {
    const expired = await pendingInteraction();
    await server.service.db('oidc_interactions').where({ id: expired }).update({ expires_at: Date.now() - 1 });
    expect((await api.post('/oidc/authorize/confirm', { interactionId: expired })).body).toEqual(GONE);
    expect((await api.post('/oidc/authorize/consent', { interactionId: expired, approved: true })).body).toEqual(GONE);

    const answered = await pendingInteraction();
    expect((await api.post('/oidc/authorize/consent', { interactionId: answered, approved: true })).status).toBe(200);
    expect((await api.post('/oidc/authorize/consent', { interactionId: answered, approved: true })).body).toEqual(GONE);
    expect((await api.post('/oidc/authorize/confirm', { interactionId: answered })).body).toEqual(GONE);
  });

  it("refuse to let another person answer an interaction someone signed in to", async () => {
    const owner = await createActiveUser(server);
    const request = await authorizationRequest(rp);
    const agent = new UserAgent();
    const login = await agent.go(request.url.toString());
    const consentPage = await agent.submit(login, { email: owner.email, password: PASSWORD });
    const interactionId = /name="interaction" value="([^"]+)"/.exec(consentPage.html)?.[1] ?? '';
    expect(consentPage.html).toContain('action="/oidc/consent"');
    // A code is issued only once its interaction is completed (`issueCode`), and nobody consented.
    const answered = async () => (await server.service.db('oidc_interactions').where({ id: interactionId }).first('completed_at'))?.completed_at;
    const consents = async () => (await server.service.db('oidc_consents').count({ n: '*' }))[0]?.n;
    const before = await consents();
    for (const [path, body] of [
      ['/oidc/authorize/confirm', { interactionId }],
      ['/oidc/authorize/consent', { interactionId, approved: true }],
      ['/oidc/authorize/consent', { interactionId, approved: false }],
    ] as const) {
      const res = await api.post(path, body);
      expect(res.body, path).toEqual({ status: 403, name: 'ForbiddenError', message: 'This sign-in request belongs to another person', details: { reqId: expect.any(String) } });
    }
    expect(await answered()).toBeNull();
    expect(await consents()).toBe(before);
    // The owner can still finish it.
    const done = await agent.submit(consentPage, { decision: 'allow' });
    expect(done.location).toMatch(/^http:\/\/127\.0\.0\.1:9\/callback\?code=/);
  });
});
