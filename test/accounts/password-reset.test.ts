import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { lastMailTo, readOutbox } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { startSiteverify, type Siteverify } from '../helpers/siteverify.ts';
import { createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

async function resetLink(email: string): Promise<string> {
  const mail = await lastMailTo(server.dataDir, email);
  expect(mail.subject).toBe('Password reset');
  const token = /\/user\/password\?token=([\w-]+)/.exec(mail.text)?.[1];
  if (!token) throw new Error(`no reset link in ${mail.text}`);
  return token;
}

describe('password reset', () => {
  it('needs human verification', async () => {
    const user = await createActiveUser(server);
    const before = (await readOutbox(server.dataDir)).length;
    for (const token of [undefined, null, 'not-a-human']) {
      const res = await new Client(server.url).post('/resettable', { id: user.email, ...(token === undefined ? {} : { token }) });
      expect(res.status).toBe(400);
      expect(res.body.name).toBe('HumanVerificationRequiredError');
    }
    expect((await readOutbox(server.dataDir)).length).toBe(before);
  });

  it('mails a link, shows it, sets the new password and ends every old session', async () => {
    const user = await createActiveUser(server);
    const { client: oldSession } = await loggedIn(server, user.email);
    const res = await new Client(server.url).post('/resettable', { id: user.email, token: 'dev-ok' });
    expect(res.body).toEqual({ id: user.email });
    const token = await resetLink(user.email);

    const shown = await new Client(server.url).get(`/resettable/${token}`);
    expect(shown.status).toBe(200);
    expect(shown.body).toEqual({
      resettable: {
        action: 'reset',
        token,
        username: user.id,
        groupId: user.email,
        expireAt: expect.any(String),
        group: expect.objectContaining({ id: user.email, members: [user.id] }),
      },
    });
    const lifetime = Date.parse(shown.body.resettable.expireAt) - Date.now();
    expect(lifetime).toBeGreaterThan(59 * 60 * 1000);
    expect(lifetime).toBeLessThanOrEqual(60 * 60 * 1000);

    const weak = await new Client(server.url).request('PUT', `/reset/${token}`, { password: 'weak' });
    expect(weak.status).toBe(400);
    expect(weak.body.details).toEqual({ path: 'password', reqId: expect.any(String) });
    expect((await oldSession.get('/profiles')).status).toBe(200);

    const done = await new Client(server.url).request('PUT', `/reset/${token}`, { password: 'Brand-New-Pass9' });
    expect(done.status).toBe(200);
    expect(done.body).toEqual({ status: 'ok' });
    expect((await oldSession.get('/profiles')).status).toBe(401);
    expect((await oldSession.post('/refreshToken')).status).toBe(401);
    expect((await new Client(server.url).post('/login', { id: user.email, password: PASSWORD })).status).toBe(400);
    expect((await new Client(server.url).post('/login', { id: user.email, password: 'Brand-New-Pass9' })).status).toBe(200);

    const reused = await new Client(server.url).request('PUT', `/reset/${token}`, { password: 'Another-Pass99' });
    expect(reused.status).toBe(400);
    expect(reused.body.message).toBe('Reset token is not valid');
  });

  it('from a browser signed in to the same account, keeps that session and ends every other, as the web client expects', async () => {
    const user = await createActiveUser(server);
    const { client: here } = await loggedIn(server, user.email);
    const { client: elsewhere } = await loggedIn(server, user.email);
    const before = { ...Object.fromEntries(here.jar) };
    await new Client(server.url).post('/resettable', { id: user.email, token: 'dev-ok' });
    const token = await resetLink(user.email);

    // openreview-web `app/user/password/ResetForm.js`: `PUT /reset/{token}`, then, signed in and
    // "Log me out of all other sessions" ticked (its default), `POST /logout-all-devices`.
    const done = await here.request('PUT', `/reset/${token}`, { password: 'Brand-New-Pass9' });
    expect(done.status).toBe(200);
    expect(done.body).toEqual({ status: 'ok' });
    // The session is kept with fresh tokens: the old ones carry the token version left behind.
    expect(Object.keys(done.cookies).sort()).toEqual(['service.accessToken', 'service.refreshToken', 'service.user']);
    expect(here.jar.get('service.refreshToken')).not.toBe(before['service.refreshToken']);
    expect((await here.post('/logout-all-devices')).status).toBe(200);
    expect((await here.get('/profiles')).status).toBe(200);

    expect((await elsewhere.get('/profiles')).status).toBe(401);
    expect((await elsewhere.post('/refreshToken')).status).toBe(401);
    const stale = new Client(server.url);
    stale.jar.set('service.accessToken', before['service.accessToken']!);
    expect((await stale.get('/profiles')).status).toBe(401);
    const audit = await server.service.db('audit_log').where({ target: user.id, action: 'password:reset' }).first();
    expect(typeof audit.details === 'string' ? JSON.parse(audit.details) : audit.details).toMatchObject({ sessionsEnded: 'others' });
  });

  it('keeps no session named by an access token alone, in a header or a cookie: every session ends', async () => {
    const user = await createActiveUser(server);
    const { client: owner, token } = await loggedIn(server, user.email);
    await new Client(server.url).post('/resettable', { id: user.email, token: 'dev-ok' });
    const link = await resetLink(user.email);
    // An access cookie planted in the browser that resets (a sibling host under COOKIE_DOMAIN can).
    const planted = new Client(server.url);
    planted.jar.set('service.accessToken', token);
    const done = await planted.request('PUT', `/reset/${link}`, { password: 'Brand-New-Pass9' });
    expect(done.status).toBe(200);
    expect(done.cookies).toEqual({});
    expect((await owner.get('/profiles')).status).toBe(401);
    expect((await owner.post('/refreshToken')).status).toBe(401);

    const other = await createActiveUser(server);
    const bearer = (await loggedIn(server, other.email)).token;
    await new Client(server.url).post('/resettable', { id: other.email, token: 'dev-ok' });
    const byHeader = new Client(server.url);
    byHeader.bearer = bearer;
    expect((await byHeader.request('PUT', `/reset/${await resetLink(other.email)}`, { password: 'Brand-New-Pass9' })).status).toBe(200);
    expect((await byHeader.get('/profiles')).status).toBe(401);
  });

  it('from a browser signed in to another account, ends every session of the account reset and keeps the browser\'s', async () => {
    const [user, other] = [await createActiveUser(server), await createActiveUser(server)];
    const { client: owner } = await loggedIn(server, user.email);
    const { client: browser } = await loggedIn(server, other.email);
    await new Client(server.url).post('/resettable', { id: user.email, token: 'dev-ok' });
    const token = await resetLink(user.email);
    const done = await browser.request('PUT', `/reset/${token}`, { password: 'Brand-New-Pass9' });
    expect(done.status).toBe(200);
    expect(done.cookies).toEqual({});
    expect((await owner.get('/profiles')).status).toBe(401);
    expect((await browser.get('/profiles')).status).toBe(200);
  });

  it('a new request voids the previous link, and a password change voids every outstanding one', async () => {
    const user = await createActiveUser(server);
    await new Client(server.url).post('/resettable', { id: user.email, token: 'dev-ok' });
    const first = await resetLink(user.email);
    await new Client(server.url).post('/resettable', { id: user.id, token: 'dev-ok' });
    const second = await resetLink(user.email);
    expect((await new Client(server.url).get(`/resettable/${first}`)).status).toBe(400);
    expect((await new Client(server.url).request('PUT', `/reset/${second}`, { password: 'Second-Link-Pass1' })).status).toBe(200);
    expect(await server.service.db('account_tokens').where({ profile_id: user.id, kind: 'reset' }).whereNull('used_at')).toEqual([]);
  });

  it('answers an unknown id the same way, and mails nothing', async () => {
    const before = (await readOutbox(server.dataDir)).length;
    const res = await new Client(server.url).post('/resettable', { id: 'ghost@example.org', token: 'dev-ok' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: 'ghost@example.org' });
    expect((await readOutbox(server.dataDir)).length).toBe(before);
  });

  it('an unknown token is a clear 400', async () => {
    const res = await new Client(server.url).get('/resettable/not-a-real-token');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 400, name: 'ValidationError', message: 'Reset token is not valid', details: { path: 'token', reqId: expect.any(String) } });
  });
});

describe('human verification against a siteverify endpoint', () => {
  let verifier: Siteverify;
  let remote: TestServer;

  beforeAll(async () => {
    verifier = await startSiteverify((form) => form.get('secret') === 's3cret' && form.get('response') === 'human-yes');
    remote = await startServer({ HUMAN_VERIFICATION_URL: verifier.url, HUMAN_VERIFICATION_SECRET: 's3cret' });
  });
  afterAll(async () => {
    await remote.close();
    await verifier.close();
  });

  it('posts the secret and the token, and follows its answer; dev-ok means nothing there', async () => {
    const http = new Client(remote.url);
    const body = { email: 'remote@example.org', password: PASSWORD, fullname: 'Re Mote' };
    expect((await http.post('/register', { ...body, token: 'dev-ok' })).body.name).toBe('HumanVerificationRequiredError');
    // Outside development mode a sign-up without a token is refused (SIGNUP_WITHOUT_HUMAN_VERIFICATION is off).
    const missing = await http.post('/register', body);
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ name: 'HumanVerificationRequiredError', details: { path: 'token' } });
    expect((await http.post('/register', { ...body, token: 'human-yes' })).body).toEqual({ id: '~Re_Mote1', status: 'ok' });
    expect(verifier.seen.at(-1)?.get('secret')).toBe('s3cret');
    expect(verifier.seen.at(-1)?.has('remoteip')).toBe(true);
  });

  it('logs at start-up that development mode accepts only dev-ok, and not in remote mode', () => {
    expect(server.logs.join('\n')).toContain('development mode');
    expect(remote.logs.join('\n')).not.toContain('development mode');
  });
});
