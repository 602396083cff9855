/**
 * Issue 12, defect 10. The attack: a refresh token copied from a person's cookie keeps working
 * for whoever refreshes first; when the other party later presents its (rotated-out) token it
 * only got a 401, and the session lived on in the thief's hands. RFC 9700 §4.14.2: reuse of a
 * rotated-out refresh token must end the session, the newest token included.
 *
 * The one exception, documented: the token rotated out just before the current one, presented
 * again within 10 seconds, is a browser's second simultaneous refresh, or its retry after an
 * answer it never received; while the token that replaced it was never used, it gets that same
 * refresh token again with a new access token, and the session stays.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

function withRefresh(token: string): Client {
  const client = new Client(server.url);
  client.jar.set('service.refreshToken', token);
  return client;
}

/** Lets the grace period pass for every rotation so far, without waiting. */
async function ageRotations(): Promise<void> {
  await server.service.db('session_refresh_history').update({ rotated_at: Date.now() - 60_000 });
}

describe('reuse of a rotated-out refresh token', () => {
  it('ends the session: the thief’s newer tokens stop working too', async () => {
    const user = await createActiveUser(server);
    const victim = await loggedIn(server, user.email);
    const stolen = victim.client.jar.get('service.refreshToken') ?? '';

    // The thief refreshes first and gets the session's newest refresh token.
    const thief = withRefresh(stolen);
    const taken = await thief.post('/refreshToken');
    expect(taken.status).toBe(200);
    const thiefAccess = taken.body.token as string;
    await ageRotations();

    // The victim's browser refreshes with its (now rotated-out) token: reuse.
    const replay = await victim.client.post('/refreshToken');
    expect(replay.status).toBe(401);
    expect(replay.body).toMatchObject({ status: 401, name: 'UnauthorizedError' });

    // The whole session is over: the thief's refresh token and access token are refused.
    expect((await thief.post('/refreshToken')).status).toBe(401);
    const byToken = new Client(server.url);
    byToken.bearer = thiefAccess;
    expect((await byToken.get('/profiles')).status).toBe(401);
    const row = await server.service.db('sessions').where({ profile_id: user.id }).first();
    expect(row.revoked_at).not.toBeNull();
    expect(server.logs.join('\n')).toContain('a rotated-out refresh token was used again');
    expect(server.logs.join('\n')).not.toContain(stolen);
  });

  it('a token two rotations old ends the session even at once', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    const first = client.jar.get('service.refreshToken') ?? '';
    expect((await client.post('/refreshToken')).status).toBe(200);
    expect((await client.post('/refreshToken')).status).toBe(200);
    expect((await withRefresh(first).post('/refreshToken')).status).toBe(401);
    expect((await client.post('/refreshToken')).status).toBe(401);
    expect((await client.get('/profiles')).status).toBe(401);
  });

  it('two simultaneous refreshes of one browser both succeed and the session stays', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    const cookie = client.jar.get('service.refreshToken') ?? '';
    const tabs = [withRefresh(cookie), withRefresh(cookie), withRefresh(cookie)];
    const answers = await Promise.all(tabs.map((tab) => tab.post('/refreshToken')));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    // One of them rotated the session; each sets the refresh cookie that rotation made, whichever the browser keeps.
    const rotated = answers.filter((a) => a.cookies['service.refreshToken']);
    expect(new Set(rotated.map((a) => a.cookies['service.refreshToken']?.value)).size).toBe(1);
    expect(rotated).toHaveLength(3);
    for (const answer of answers) {
      const viaToken = new Client(server.url);
      viaToken.bearer = answer.body.token;
      expect((await viaToken.get('/profiles')).status).toBe(200);
    }
    // The browser's cookie jar now holds the new cookie, and it works.
    const next = withRefresh(rotated[0]?.cookies['service.refreshToken']?.value ?? '');
    expect((await next.post('/refreshToken')).status).toBe(200);
  });

  it("within the grace period the previous token gets the rotation's answer again while it was not used; after it, reuse ends the session", async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    const previous = client.jar.get('service.refreshToken') ?? '';
    const first = await client.post('/refreshToken');
    expect(first.status).toBe(200);

    const late = withRefresh(previous);
    const grace = await late.post('/refreshToken');
    expect(grace.status).toBe(200);
    expect(grace.cookies['service.refreshToken']?.value).toBe(first.cookies['service.refreshToken']?.value);


    await ageRotations();
    expect((await withRefresh(previous).post('/refreshToken')).status).toBe(401);
    expect((await client.post('/refreshToken')).status).toBe(401);
    expect((await late.post('/refreshToken')).status).toBe(401);
  });

  it('a refresh whose answer was lost (a dropped connection, a server stopped after the rotation) carries on when sent again', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    const held = client.jar.get('service.refreshToken') ?? '';
    // Rotated on the server; the browser never saw the answer, and keeps its cookie.
    expect((await withRefresh(held).post('/refreshToken')).status).toBe(200);
    const retried = await client.post('/refreshToken');
    expect(retried.status).toBe(200);
    expect(client.jar.get('service.refreshToken')).not.toBe(held);
    // Long after, the browser's session goes on: its cookie is the session's current one.
    await ageRotations();
    expect((await client.post('/refreshToken')).status).toBe(200);
    expect((await client.get('/profiles')).status).toBe(200);
  });

  it('logging out with a rotated-out token ends the session it belonged to', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    const previous = client.jar.get('service.refreshToken') ?? '';
    expect((await client.post('/refreshToken')).status).toBe(200);
    expect((await withRefresh(previous).post('/logout')).status).toBe(200);
    expect((await client.get('/profiles')).status).toBe(401);
  });
});
