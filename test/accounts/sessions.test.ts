import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountsRepository } from '../../server/accounts/repository.ts';
import { hashSecret } from '../../server/secrets.ts';
import { TestClock } from '../helpers/clock.ts';
import { Client } from '../helpers/http.ts';
import { lastMailTo } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';

let server: TestServer;
const clock = new TestClock();

beforeAll(async () => {
  server = await startServer({}, undefined, { now: clock.now });
});
afterAll(async () => {
  await server.close();
});

const DAY = 24 * 60 * 60 * 1000;
const count = async (table: string) => Number((await server.service.db(table).count({ n: '*' }))[0]?.n);

describe('registration', () => {
  it('creates an inactive profile, its groups, and writes the activation mail to the outbox', async () => {
    const client = new Client(server.url);
    const res = await client.post('/register', { token: 'dev-ok', email: 'Ada@Example.org', password: 'Analytical-Engine1', fullname: 'Ada Lovelace' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: '~Ada_Lovelace1', status: 'ok' });

    const mail = await lastMailTo(server.dataDir, 'ada@example.org');
    expect(mail.subject).toBe('Signup confirmation');
    const token = /\/profile\/activate\?token=([\w-]+)/.exec(mail.text)?.[1];
    expect(token).toMatch(/^[\w-]{43}$/);
    expect(mail.text).toMatch(/code: \d{6}/);
    // Only the hash of the token is stored.
    const stored = await server.service.db('account_tokens').where({ profile_id: '~Ada_Lovelace1' }).first();
    expect(stored.kind).toBe('activation');
    expect(stored.token_hash).not.toContain(token);
    expect(JSON.stringify(stored)).not.toContain(token);

    const profile = await server.service.db('profiles').where({ id: '~Ada_Lovelace1' }).first();
    expect(profile.state).toBe('Inactive');
    const members = await server.service.db('group_members').whereIn('group_id', ['~Ada_Lovelace1', 'ada@example.org']).orderBy('group_id');
    expect(members).toEqual([
      { group_id: 'ada@example.org', member: '~Ada_Lovelace1' },
      { group_id: '~Ada_Lovelace1', member: 'ada@example.org' },
    ]);
  });

  it('an inactive profile cannot log in, even with the right password', async () => {
    const res = await new Client(server.url).post('/login', { id: 'ada@example.org', password: 'Analytical-Engine1' });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ status: 403, name: 'ForbiddenError' });
    expect(res.cookies['service.accessToken']).toBeUndefined();
  });

  it('an email already in use gets the same answer, creates nothing, and its owner is told', async () => {
    const before = await count('profiles');
    const res = await new Client(server.url).post('/register', { token: 'dev-ok',
      email: 'ada@example.org',
      password: 'Analytical-Engine2',
      fullname: 'Ada Lovelace',
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: '~Ada_Lovelace2', status: 'ok' });
    expect(await count('profiles')).toBe(before);
    const mail = await lastMailTo(server.dataDir, 'ada@example.org');
    expect(mail.subject).toBe('Sign-up attempt with your email address');
  });

  it('refuses a weak password, naming the field, and writes nothing', async () => {
    const before = await count('profiles');
    const res = await new Client(server.url).post('/register', { token: 'dev-ok', email: 'weak@example.org', password: 'short', fullname: 'Weak Password' });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual({ path: 'password', reqId: expect.any(String) });
    // Only its length is the schema's (NIST SP 800-63B: no composition rules), counted in characters.
    expect(res.body.message).toBe('password: The password must be at least 8 characters');
    expect(res.body.errors).toBeUndefined();
    expect(await count('profiles')).toBe(before);
  });
});

describe('login', () => {
  it('returns the token and the simplified profile, and sets HttpOnly SameSite=Lax cookies', async () => {
    const user = await createActiveUser(server, { fullname: 'Alan Turing' });
    const client = new Client(server.url);
    const res = await client.post('/login', { id: user.email, password: PASSWORD });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      token: expect.any(String),
      user: {
        id: user.email,
        profile: {
          id: user.id,
          first: 'Alan',
          middle: '',
          last: 'Turing',
          fullname: 'Alan Turing',
          emails: [user.email],
          preferredEmail: user.email,
          usernames: [user.id],
          preferredId: user.id,
          state: 'Active',
          tokenVersion: 0,
        },
      },
    });
    const access = res.cookies['service.accessToken'];
    expect(access?.value).toBe(res.body.token);
    expect(access?.attributes).toMatch(/HttpOnly/);
    expect(access?.attributes).toMatch(/SameSite=Lax/);
    expect(access?.attributes).not.toMatch(/Secure/);
    expect(res.cookies['service.refreshToken']?.attributes).toMatch(/HttpOnly/);
  });

  it('accepts the tilde id as well as the email', async () => {
    const user = await createActiveUser(server);
    const res = await new Client(server.url).post('/login', { id: user.id, password: PASSWORD });
    expect(res.status).toBe(200);
    expect(res.body.user.id).toBe(user.email);
  });

  it('gives a wrong id and a wrong password the same answer', async () => {
    const user = await createActiveUser(server);
    const wrongPassword = await new Client(server.url).post('/login', { id: user.email, password: 'Not-The-Password1' });
    const wrongId = await new Client(server.url).post('/login', { id: 'nobody@example.org', password: PASSWORD });
    expect(wrongPassword.status).toBe(400);
    expect(wrongPassword.body).toEqual({ status: 400, name: 'BadRequestError', message: 'Invalid username or password', details: { reqId: expect.any(String) } });
    // The same answer, but for the request id each carries.
    expect(wrongId.body).toEqual({ ...wrongPassword.body, details: { reqId: expect.any(String) } });
  });

  it('is also served through tRPC, with the same cookies', async () => {
    const user = await createActiveUser(server);
    const client = new Client(server.url);
    const res = await client.post('/trpc/accounts.login', { id: user.email, password: PASSWORD });
    expect(res.status).toBe(200);
    expect(res.body.result.data.user.id).toBe(user.email);
    expect(client.jar.get('service.accessToken')).toBe(res.body.result.data.token);
  });
});

describe('sessions', () => {
  it('"who am I": GET /profiles answers the caller, by cookie or by bearer token', async () => {
    const user = await createActiveUser(server);
    const { client, token } = await loggedIn(server, user.email);
    const byCookie = await client.get('/profiles');
    expect(byCookie.status).toBe(200);
    expect(byCookie.body.profiles).toHaveLength(1);
    expect(byCookie.body.profiles[0]).toMatchObject({ id: user.id, state: 'Active', email: user.email });

    const bearer = new Client(server.url);
    bearer.bearer = token;
    expect((await bearer.get('/profiles')).body.profiles[0].id).toBe(user.id);
    expect((await new Client(server.url).get('/profiles')).status).toBe(401);
  });

  it('refresh issues a new token from the refresh cookie and rotates that cookie', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    const firstRefresh = client.jar.get('service.refreshToken');
    const res = await client.post('/refreshToken');
    expect(res.status).toBe(200);
    expect(res.body.user.profile.id).toBe(user.id);
    expect(client.jar.get('service.refreshToken')).not.toBe(firstRefresh);

    // The rotated-out refresh token is good for nothing once the few seconds a browser's second
    // simultaneous refresh may take are over (here: moved into the past).
    await server.service.db('session_refresh_history').update({ rotated_at: Date.now() - 60_000 });
    const replay = new Client(server.url);
    replay.jar.set('service.refreshToken', firstRefresh ?? '');
    expect((await replay.post('/refreshToken')).status).toBe(401);
  });

  it('a refresh of a live session sends one statement, and its answer shows the profile as a login does', async () => {
    const user = await createActiveUser(server);
    const client = new Client(server.url);
    const login = await client.post('/login', { id: user.email, password: PASSWORD });
    expect(login.status).toBe(200);
    const sent: string[] = [];
    const listener = (query: { sql: string }) => sent.push(query.sql.replace(/\s+/g, ' ').trim());
    server.service.db.on('query', listener);
    let res;
    try {
      res = await client.post('/refreshToken');
    } finally {
      server.service.db.off('query', listener);
    }
    expect(res.status).toBe(200);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/^update sessions set refresh_hash = /);
    expect(res.body.user).toEqual(login.body.user);
    // The token and the readable cookie carry the usernames, read in that same statement
    // (the web client's profile page tells the person's own by them).
    expect(decodeJwt(res.body.token).user).toMatchObject({ profile: { id: user.id, usernames: [user.id] } });
    expect(decodeJwt(login.body.token).user).toMatchObject({ profile: { id: user.id, usernames: [user.id] } });
    expect(JSON.parse(decodeURIComponent(client.jar.get('service.user') ?? '{}'))).toMatchObject({ profile: { usernames: [user.id] } });
    // The new token names the same session and person; the old one is rotated out.
    expect((await client.get('/profiles')).body.profiles[0].id).toBe(user.id);
  });

  it('a rotation refused while its answer is being made gives out nothing: no token, no new cookie, no record', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    const refresh = client.jar.get('service.refreshToken') ?? '';
    const { services, db } = server.service;
    const oldHash = hashSecret(refresh);
    const found = await new AccountsRepository(db).sessions.findWithProfile({ refreshHash: oldHash }, { withEmails: true });
    if (!found) throw new Error('no session');
    // Ended after it was read, before its rotation: the rotation's statement finds it revoked,
    // while the signature and the profile's view are under way beside it.
    await db('sessions').where({ id: found.session.id }).update({ revoked_at: Date.now() });
    await expect(services.sessions.resumeSession(found.session, oldHash, found.profile, found.emails)).rejects.toMatchObject({ name: 'UnauthorizedError' });
    expect((await db('sessions').where({ id: found.session.id }).first()).refresh_hash).toBe(oldHash);
    expect(await db('session_refresh_history').where({ refresh_hash: oldHash })).toEqual([]);
    const res = await client.post('/refreshToken');
    expect(res.status).toBe(401);
    // The cookie is the one it had, or cleared: never a new token.
    expect([refresh, undefined, '']).toContain(client.jar.get('service.refreshToken'));
  });

  it('a rotation records the token rotated out with its successor, and the sweeper lets go of those past 90 days', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    const session = await server.service.db('sessions').where({ profile_id: user.id }).first();
    const history = () => server.service.db('session_refresh_history').where({ session_id: session.id }).orderBy('rotated_at');
    const rotated = async () => {
      const from = clock.now();
      expect((await client.post('/refreshToken')).status).toBe(200);
      return { from, to: clock.now() };
    };
    // The file's other tests share the server and its clock: it is moved back at the end.
    let moved = 0;
    const advance = (ms: number) => {
      clock.advance(ms);
      moved += ms;
    };
    try {
      const firstAt = await rotated();
      advance(20 * DAY);
      const secondAt = await rotated();
      const current = (await server.service.db('sessions').where({ id: session.id }).first()).refresh_hash;
      const [first, second] = await history();
      expect(first.refresh_hash).toBe(session.refresh_hash);
      expect(second).toMatchObject({ refresh_hash: first.next_hash, next_hash: current });
      for (const [row, at] of [[first, firstAt], [second, secondAt]] as const) {
        expect(Number(row.rotated_at)).toBeGreaterThanOrEqual(at.from);
        expect(Number(row.rotated_at)).toBeLessThanOrEqual(at.to);
      }

      advance(71 * DAY);
      expect(await server.service.sweep()).toBe(true);
      expect((await history()).map((row) => row.refresh_hash)).toEqual([second.refresh_hash]);
    } finally {
      clock.advance(-moved);
    }
  });

  it('the sweeper lets go of a backlog of rotated-out tokens longer than one batch, and keeps the recent ones', async () => {
    const user = await createActiveUser(server);
    await loggedIn(server, user.email);
    const session = await server.service.db('sessions').where({ profile_id: user.id }).first();
    const old = clock.now() - 91 * DAY;
    const rows = Array.from({ length: 2_500 }, (_, i) => ({ refresh_hash: `backlog-${i}`, session_id: session.id, next_hash: `backlog-${i + 1}`, rotated_at: old + i }));
    await server.service.db.batchInsert('session_refresh_history', [...rows, { refresh_hash: 'recent', session_id: session.id, next_hash: 'x', rotated_at: clock.now() }], 500);
    expect(await server.service.sweep()).toBe(true);
    expect(await server.service.db('session_refresh_history').where({ session_id: session.id }).pluck('refresh_hash')).toEqual(['recent']);
  });

  it('refresh with only a bearer token issues a new token for the same session', async () => {
    const user = await createActiveUser(server);
    const { token } = await loggedIn(server, user.email);
    const bearer = new Client(server.url);
    bearer.bearer = token;
    const res = await bearer.post('/refreshToken');
    expect(res.status).toBe(200);
    bearer.bearer = res.body.token;
    expect((await bearer.get('/profiles')).status).toBe(200);
  });

  it('after logout the same token is rejected', async () => {
    const user = await createActiveUser(server);
    const { client, token } = await loggedIn(server, user.email);
    const res = await client.post('/logout');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({});
    expect(client.jar.has('service.accessToken')).toBe(false);

    const stale = new Client(server.url);
    stale.bearer = token;
    const after = await stale.get('/profiles');
    expect(after.status).toBe(401);
    expect(after.body).toMatchObject({ status: 401, name: 'UnauthorizedError' });
  });

  it('logout-all-devices keeps this session with a fresh token and ends every other one', async () => {
    const user = await createActiveUser(server);
    const laptop = await loggedIn(server, user.email);
    const phone = await loggedIn(server, user.email);

    const res = await laptop.client.post('/logout-all-devices');
    expect(res.status).toBe(200);
    expect(res.body.user.profile.tokenVersion).toBe(1);
    expect(res.body.token).not.toBe(laptop.token);

    expect((await laptop.client.get('/profiles')).status).toBe(200);
    const old = new Client(server.url);
    old.bearer = laptop.token;
    expect((await old.get('/profiles')).status).toBe(401);
    expect((await phone.client.get('/profiles')).status).toBe(401);
    expect((await phone.client.post('/refreshToken')).status).toBe(401);
  });

  it('an expired token gets 401 TokenExpiredError', async () => {
    const user = await createActiveUser(server);
    const client = new Client(server.url);
    const login = await client.post('/login', { id: user.email, password: PASSWORD, expiresIn: 1 });
    expect(login.status).toBe(200);
    clock.advance(2100);
    const bearer = new Client(server.url);
    bearer.bearer = login.body.token;
    const res = await bearer.get('/profiles');
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ status: 401, name: 'TokenExpiredError', message: 'Token has expired. Please log in again.', details: { reqId: expect.any(String) } });
  });

  it('a session can last at most one week', async () => {
    const user = await createActiveUser(server);
    const res = await new Client(server.url).post('/login', { id: user.email, password: PASSWORD, expiresIn: 7 * 24 * 3600 + 1 });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual({ path: 'expiresIn', reqId: expect.any(String) });
  });
});

describe('profiles', () => {
  it('shows another profile without its emails, and the owner with them', async () => {
    const owner = await createActiveUser(server, { fullname: 'Barbara Liskov' });
    const other = await createActiveUser(server);
    const { client } = await loggedIn(server, other.email);
    const seen = await client.get(`/profiles?id=${encodeURIComponent(owner.id)}`);
    expect(seen.status).toBe(200);
    expect(seen.body.profiles[0].id).toBe(owner.id);
    expect(seen.body.profiles[0].content).toMatchObject({ emails: [], emailsConfirmed: [] });
    expect(seen.body.profiles[0].content.preferredEmail).toBeUndefined();
    expect(JSON.stringify(seen.body)).not.toContain(owner.email);

    const mine = await (await loggedIn(server, owner.email)).client.get(`/profiles?email=${encodeURIComponent(owner.email)}`);
    expect(mine.body.profiles[0].content.emails).toEqual([owner.email]);
  });

  it('a moderator sees the emails of others', async () => {
    const owner = await createActiveUser(server);
    const moderator = await createActiveUser(server, { role: 'moderator' });
    const { client } = await loggedIn(server, moderator.email);
    const seen = await client.get(`/profiles?id=${encodeURIComponent(owner.id)}`);
    expect(seen.body.profiles[0].content.emails).toEqual([owner.email]);
  });

  it('an unknown profile is an empty list, as an unknown email is', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    const res = await client.get('/profiles?id=~Nobody_Here1');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ profiles: [] });
  });
});
