import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../helpers/clock.ts';
import { Client } from '../helpers/http.ts';
import { readOutbox } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, HISTORY, PASSWORD, registerAndGetToken } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

const db = () => server.service.db;
const snapshot = async (profileId: string) => ({
  profile: await db()('profiles').where({ id: profileId }).first(),
  emails: await db()('profile_emails').where({ profile_id: profileId }),
  tokens: await db()('account_tokens').where({ profile_id: profileId }),
  sessions: await db()('sessions').where({ profile_id: profileId }),
});

describe('registration needs human verification', () => {
  it('refuses a rejected token and creates nothing (a missing one: see the remote mode in password-reset.test.ts)', async () => {
    const http = new Client(server.url);
    const before = await db()('profiles').count({ n: '*' });
    const wrong = await http.post('/register', { email: 'hv@example.org', password: PASSWORD, fullname: 'Hu Man', token: 'robot' });
    expect(wrong.status).toBe(400);
    expect(wrong.body.name).toBe('HumanVerificationRequiredError');
    expect(await db()('profiles').count({ n: '*' })).toEqual(before);
  });

  it('takes a name as {first, middle, last} as well as fullname', async () => {
    const res = await new Client(server.url).post('/register', {
      email: 'named@example.org',
      password: PASSWORD,
      name: { first: 'Chien-Shiung', middle: 'C.', last: 'Wu' },
      token: 'dev-ok',
    });
    expect(res.body).toEqual({ id: '~Chien-Shiung_C._Wu1', status: 'ok' });
  });

  it('refuses a fullname together with a name', async () => {
    const res = await new Client(server.url).post('/register', {
      email: 'both@example.org',
      password: PASSWORD,
      fullname: 'A B',
      name: { first: 'A', last: 'B' },
      token: 'dev-ok',
    });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual({ path: 'fullname', reqId: expect.any(String) });
  });
});

describe('activation', () => {
  it('shows what the activation page needs', async () => {
    const { id, token } = await registerAndGetToken(server, { email: 'page@example.org', fullname: 'Page Reader' });
    const res = await new Client(server.url).get(`/activatable/${token}`);
    expect(res.status).toBe(200);
    expect(res.body.profile).toMatchObject({ id, state: 'Inactive', content: { emails: ['page@example.org'], emailsConfirmed: [] } });
    expect(res.body.activatable).toEqual({
      action: 'activate',
      token,
      username: id,
      groupId: 'page@example.org',
      expireAt: expect.any(String),
      user: { id: 'page@example.org', profile: { id } },
    });
    expect(Date.parse(res.body.activatable.expireAt) - Date.now()).toBeGreaterThan(6.9 * 24 * 3600 * 1000);
    expect(res.body.prefixed_positions).toContain('PhD Student');
    expect(res.body.institutions).toContain('mit.edu');
    expect(res.body.institutions.length).toBeGreaterThanOrEqual(24);
  });

  it('activates, logs in, and the same token again gets 400 with nothing changed', async () => {
    const { id, token } = await registerAndGetToken(server, { email: 'ada.activates@example.org', fullname: 'Ada Activates' });
    const http = new Client(server.url);
    const res = await http.request('PUT', `/activate/${token}`, { content: { history: HISTORY, pronouns: 'she/her' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      token: expect.any(String),
      user: { id: 'ada.activates@example.org', profile: expect.objectContaining({ id, state: 'Active Automatic', emails: ['ada.activates@example.org'] }) },
    });
    expect(http.jar.get('service.accessToken')).toBe(res.body.token);
    const me = await http.get('/profiles');
    expect(me.body.profiles[0]).toMatchObject({
      id,
      state: 'Active Automatic',
      content: { pronouns: 'she/her', history: HISTORY, emailsConfirmed: ['ada.activates@example.org'] },
    });
    expect(me.body.profiles[0].pastStates.map((p: { state: string }) => p.state)).toEqual(['Inactive', 'Active Automatic']);
    expect((await new Client(server.url).post('/login', { id, password: PASSWORD })).status).toBe(200);

    const before = await snapshot(id);
    const again = await new Client(server.url).request('PUT', `/activate/${token}`, { content: { history: HISTORY } });
    expect(again.status).toBe(400);
    expect(again.body).toEqual({ status: 400, name: 'ValidationError', message: 'Activation token is not valid', details: { path: 'token', reqId: expect.any(String) } });
    expect(await snapshot(id)).toEqual(before);
    expect((await new Client(server.url).get(`/activatable/${token}`)).status).toBe(400);
  });

  it('a year of birth given at activation starts its correction window (dobTimestamp); none given, none set', async () => {
    const withYear = await registerAndGetToken(server, { email: 'born.then@example.org', fullname: 'Born Then' });
    const activated = await new Client(server.url).request('PUT', `/activate/${withYear.token}`, { content: { history: HISTORY, yearOfBirth: 1990 } });
    expect(activated.status).toBe(200);
    const row = await db()('profiles').where({ id: withYear.id }).first();
    expect(Number(row.dob_timestamp)).toBe(Number(row.tmdate));
    const without = await registerAndGetToken(server, { email: 'no.year@example.org', fullname: 'No Year' });
    expect((await new Client(server.url).request('PUT', `/activate/${without.token}`, { content: { history: HISTORY } })).status).toBe(200);
    expect((await db()('profiles').where({ id: without.id }).first()).dob_timestamp).toBeNull();
  });

  it('an email at a listed institution activates as Active Institutional', async () => {
    const { token } = await registerAndGetToken(server, { email: 'grace@cs.mit.edu', fullname: 'Grace Institutional' });
    const res = await new Client(server.url).request('PUT', `/activate/${token}`, { content: { history: HISTORY } });
    expect(res.body.user.profile.state).toBe('Active Institutional');
  });

  it('with moderation on, the profile waits: no token, and an "activation pending" mail', async () => {
    await server.service.services.activation.setModeration(true);
    try {
      const { id, token } = await registerAndGetToken(server, { email: 'waits@example.org', fullname: 'Wai Ting' });
      const http = new Client(server.url);
      const res = await http.request('PUT', `/activate/${token}`, { content: { history: HISTORY } });
      expect(res.status).toBe(200);
      expect(res.body.token).toBeUndefined();
      expect(res.body.user.profile).toMatchObject({ id, state: 'Needs Moderation' });
      expect(http.jar.has('service.accessToken')).toBe(false);
      const mails = (await readOutbox(server.dataDir)).filter((m) => m.to === 'waits@example.org');
      expect(mails.at(-1)?.subject).toBe('Activation pending');
      expect((await new Client(server.url).post('/login', { id, password: PASSWORD })).status).toBe(403);
    } finally {
      await server.service.services.activation.setModeration(false);
    }
  });

  it('requires a history entry, and changes nothing without one', async () => {
    const { id, token } = await registerAndGetToken(server, { email: 'nohistory@example.org', fullname: 'No History' });
    const before = await snapshot(id);
    for (const content of [{}, { history: [] }, { history: null }]) {
      const res = await new Client(server.url).request('PUT', `/activate/${token}`, { content });
      expect(res.status).toBe(400);
      expect(res.body.details.path).toMatch(/^content\/history/);
    }
    expect(await snapshot(id)).toEqual(before);
  });

  it('names unknown and over-limit content fields, and changes nothing', async () => {
    const { id, token } = await registerAndGetToken(server, { email: 'badcontent@example.org', fullname: 'Bad Content' });
    const before = await snapshot(id);
    const res = await new Client(server.url).request('PUT', `/activate/${token}`, {
      content: { history: [{ ...HISTORY[0], start: 1899 }], pronouns: 'x'.repeat(51), favouriteColour: 'blue' },
      extra: true,
    });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { details: { path: string } }) => e.details.path).sort()).toEqual(
      ['content/favouriteColour', 'content/history/0/start', 'content/pronouns', 'extra'].sort(),
    );
    expect(await snapshot(id)).toEqual(before);
  });

  it('of two simultaneous activations with one token, exactly one succeeds', async () => {
    const { token } = await registerAndGetToken(server, { email: 'race@example.org', fullname: 'Race Condition' });
    const results = await Promise.all(
      [1, 2, 3].map(() => new Client(server.url).request('PUT', `/activate/${token}`, { content: { history: HISTORY } })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 400, 400]);
  });

  it('gives new names their own tilde usernames', async () => {
    const { id, token } = await registerAndGetToken(server, { email: 'names@example.org', fullname: 'Mary Names' });
    const res = await new Client(server.url).request('PUT', `/activate/${token}`, {
      content: {
        history: HISTORY,
        names: [
          { first: 'Mary', last: 'Names', fullname: 'Mary Names', username: id, preferred: true },
          { first: 'Maria', last: 'Nomes', fullname: 'Maria Nomes' },
        ],
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.user.profile.usernames).toEqual([id, '~Maria_Nomes1'].sort());
    expect(res.body.user.profile.preferredId).toBe(id);
  });

  it('refuses a name claiming someone else\'s username', async () => {
    const other = await createActiveUser(server, { fullname: 'Other Person' });
    const { token } = await registerAndGetToken(server, { email: 'thief@example.org', fullname: 'Name Thief' });
    const res = await new Client(server.url).request('PUT', `/activate/${token}`, {
      content: { history: HISTORY, names: [{ first: 'Other', last: 'Person', username: other.id }] },
    });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual({ path: 'content/names', reqId: expect.any(String) });
  });
});

describe('re-sending the activation mail', () => {
  it('mails a new link and voids the old one', async () => {
    const { id, token } = await registerAndGetToken(server, { email: 'resend@example.org', fullname: 'Re Send' });
    const res = await new Client(server.url).post('/activatable', { id: 'resend@example.org' });
    expect(res.body).toEqual({ id: 'resend@example.org' });
    const mails = (await readOutbox(server.dataDir)).filter((m) => m.to === 'resend@example.org');
    expect(mails).toHaveLength(2);
    const fresh = /token=([\w-]+)/.exec(mails[1]?.text ?? '')?.[1];
    expect(fresh).not.toBe(token);
    expect((await new Client(server.url).get(`/activatable/${token}`)).status).toBe(400);
    expect((await new Client(server.url).get(`/activatable/${fresh}`)).body.activatable.username).toBe(id);
  });

  it('answers the same for an unknown or active account, and mails nothing', async () => {
    const active = await createActiveUser(server);
    const before = (await readOutbox(server.dataDir)).length;
    for (const id of ['nobody-here@example.org', active.email, active.id]) {
      expect((await new Client(server.url).post('/activatable', { id })).body).toEqual({ id });
    }
    expect((await readOutbox(server.dataDir)).length).toBe(before);
  });
});

describe('token lifetimes', () => {
  it('an expired activation token is not valid', async () => {
    const clock = new TestClock();
    const short = await startServer({ ACTIVATION_TOKEN_SECONDS: '1' }, undefined, { now: clock.now });
    try {
      const { token } = await registerAndGetToken(short, { email: 'expires@example.org', fullname: 'Ex Pires' });
      clock.advance(1100);
      const res = await new Client(short.url).request('PUT', `/activate/${token}`, { content: { history: HISTORY } });
      expect(res.status).toBe(400);
      expect(res.body.message).toBe('Activation token is not valid');
    } finally {
      await short.close();
    }
  });
});

describe('the session activation opens', () => {
  it('keeps its browser and address, and is a sign-in in the audit log (the security page lists both)', async () => {
    const { id, token } = await registerAndGetToken(server, { email: 'first-session@example.org', fullname: 'First Session' });
    const res = await new Client(server.url).request('PUT', `/activate/${token}`, { content: { history: HISTORY } }, { 'User-Agent': 'Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0' });
    expect(res.status).toBe(200);
    const [session] = await db()('sessions').where({ profile_id: id });
    expect(session).toMatchObject({ user_agent: 'Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0', address: '127.0.0.1' });
    const signIns = await db()('audit_log').where({ target: id, action: 'sign-in' });
    expect(signIns).toHaveLength(1);
  });
});
