/**
 * Defects found by an independent review of the accounts work, each kept as a test.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { lastMailTo } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn, PASSWORD, registerAndGetToken } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

const bearer = (token: string) => {
  const client = new Client(server.url);
  client.bearer = token;
  return client;
};

describe('tRPC errors raised outside a procedure', () => {
  it('an unknown procedure is a 404 NotFoundError, not a 500', async () => {
    const res = await new Client(server.url).get('/trpc/accounts.nope');
    expect(res.status).toBe(404);
    expect(res.body.error.data.error).toMatchObject({ status: 404, name: 'NotFoundError' });
  });

  it('malformed JSON input is a 400, not a 500', async () => {
    const res = await new Client(server.url).get('/trpc/accounts.tildeUsername?input=%7Bbroken');
    expect(res.status).toBe(400);
    expect(res.body.error.data.error).toMatchObject({ status: 400, name: 'BadRequestError' });
  });
});

describe('logs', () => {
  it('never hold a token sent as tRPC input', async () => {
    const { token } = await registerAndGetToken(server, { email: 'trpc-log@example.org', fullname: 'Trpc Log' });
    const input = encodeURIComponent(JSON.stringify({ token }));
    expect((await new Client(server.url).get(`/trpc/accounts.activatable?input=${input}`)).status).toBe(200);
    expect(server.logs.join('\n')).not.toContain(token);
  });
});

describe('logout', () => {
  it('with an expired access token still ends the session its refresh cookie names', async () => {
    const user = await createActiveUser(server);
    const client = new Client(server.url);
    await client.post('/login', { id: user.email, password: PASSWORD, expiresIn: 1 });
    const refresh = client.jar.get('service.refreshToken') ?? '';
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await client.post('/logout')).status).toBe(200);
    const replay = new Client(server.url);
    replay.jar.set('service.refreshToken', refresh);
    expect((await replay.post('/refreshToken')).status).toBe(401);
  });
});

describe('impersonation sessions', () => {
  it('end when the impersonator logs out, or logs out of every device', async () => {
    const root = await createActiveUser(server, { role: 'superuser', fullname: 'Root Ender' });
    const target = await createActiveUser(server);

    const first = await loggedIn(server, root.email);
    const imp = bearer((await bearer(first.token).post('/impersonate', { groupId: target.id })).body.token);
    expect((await imp.get('/profiles')).status).toBe(200);
    await bearer(first.token).post('/logout');
    expect((await imp.get('/profiles')).status).toBe(401);
    expect((await imp.post('/refreshToken')).status).toBe(401);

    const second = await loggedIn(server, root.email);
    const again = bearer((await bearer(second.token).post('/impersonate', { groupId: target.id })).body.token);
    expect((await again.get('/profiles')).status).toBe(200);
    await bearer(second.token).post('/logout-all-devices');
    expect((await again.get('/profiles')).status).toBe(401);
  });

  it('of a moderator by someone who may only read do not lend the moderator\'s privileges', async () => {
    const organiser = await createActiveUser(server);
    const moderator = await createActiveUser(server, { role: 'moderator' });
    const other = await createActiveUser(server);
    const { AccountsRepository } = await import('../../server/accounts/repository.ts');
    await new AccountsRepository(server.service.db).upsertGroup(moderator.id, { impersonators: [organiser.id] }, [moderator.email], Date.now());
    const { token } = await loggedIn(server, organiser.email);
    const imp = bearer((await bearer(token).post('/impersonate', { groupId: moderator.id })).body.token);
    const seen = await imp.get(`/profiles?id=${encodeURIComponent(other.id)}`);
    expect(seen.status).toBe(200);
    expect(seen.body.profiles[0].content.emails).toBeUndefined();
  });
});

describe('confirming an email', () => {
  it('works with the link token of the confirmation mail, as the spec\'s path names it', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    await client.post('/user/confirm', { alternate: 'linked@example.org' });
    const mail = await lastMailTo(server.dataDir, 'linked@example.org');
    const link = /\/confirm\?token=([\w-]+)/.exec(mail.text)?.[1];
    const code = /code: (\d{6})/.exec(mail.text)?.[1];
    // Another signed-in user cannot use it.
    const stranger = (await loggedIn(server, (await createActiveUser(server)).email)).client;
    expect((await stranger.request('PUT', `/activatelink/${link}`, { email: 'linked@example.org', token: code })).status).toBe(400);
    const res = await client.request('PUT', `/activatelink/${link}`, { email: 'linked@example.org', token: code });
    expect(res.body).toEqual({ confirmedEmail: 'linked@example.org' });
    // The confirmed address gets its group, as the registration address does.
    expect(await server.service.db('group_members').where({ group_id: 'linked@example.org' }).pluck('member')).toEqual([user.id]);
  });

  it('an alternate that is not an email is refused by the schema, naming the field', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    const res = await client.post('/user/confirm', { alternate: 'not-an-email' });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual({ path: 'alternate', reqId: expect.any(String) });
  });

  it('wrong codes for one address are limited over all its tokens, so fresh codes do not help guessing', async () => {
    const victim = await createActiveUser(server);
    const attackers = await Promise.all([1, 2, 3, 4, 5].map(() => createActiveUser(server)));
    let refused = 0;
    for (const attacker of attackers) {
      const { client } = await loggedIn(server, attacker.email);
      await client.post('/user/confirm', { alternate: victim.email });
      for (let i = 0; i < 5; i += 1) {
        const res = await client.request('PUT', '/activatelink', { email: victim.email, token: '000000' });
        if (res.status === 429) refused += 1;
      }
    }
    expect(refused).toBeGreaterThan(0);
  });
});

describe('login attempts in parallel', () => {
  // Fourteen at once once left a rate limiter's savepoint open on the shared connection, and
  // the next transaction failed with "cannot start a transaction within a transaction".
  it('cannot all slip under the limit, and leave the database usable', async () => {
    const user = await createActiveUser(server);
    const results = await Promise.all(
      Array.from({ length: 14 }, (_, i) => new Client(server.url).post('/login', { id: user.email, password: `Wrong-Guess-${i}` })),
    );
    // At most ten passwords are checked; the rest are refused (by the account's limit, or by the
    // hashing queue's share for one client address).
    expect(results.filter((r) => r.status === 400).length).toBeLessThanOrEqual(10);
    expect(results.filter((r) => r.status === 429).length).toBeGreaterThanOrEqual(4);
    expect(results.every((r) => r.status === 400 || r.status === 429)).toBe(true);
    expect((await new Client(server.url).post('/register', { email: 'after-race@example.org', password: PASSWORD, fullname: 'After Race', token: 'dev-ok' })).status).toBe(200);
  });
});

describe('tilde username errors', () => {
  it('name the field that holds the bad part', async () => {
    const res = await new Client(server.url).post('/register', {
      email: 'badname@example.org',
      password: PASSWORD,
      name: { first: 'Ada', last: 'L0velace' },
      token: 'dev-ok',
    });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual({ path: 'name/last', reqId: expect.any(String) });
  });
});
