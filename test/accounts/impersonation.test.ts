import { AccountsRepository } from '../../server/accounts/repository.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cookieHeader, keepCookies } from '../helpers/cookies.ts';
import { Client } from '../helpers/http.ts';
import { lastMailTo } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
let root: { id: string; email: string };

beforeAll(async () => {
  server = await startServer();
  root = await createActiveUser(server, { role: 'superuser', fullname: 'Super User' });
});

/**
 * A fresh browser-like session of the super user: impersonating replaces a browser's session
 * cookies, so each test starts from its own login.
 */
async function asRoot(): Promise<Client> {
  return (await loggedIn(server, root.email)).client;
}
afterAll(async () => {
  await server.close();
});

/** A group with an `impersonators` list and members, as a venue would have. */
async function group(id: string, members: string[], impersonators: string[]) {
  const repo = (await import('../../server/accounts/repository.ts')).AccountsRepository;
  await new repo(server.service.db).groups.upsert(id, { readers: ['everyone'], impersonators }, members, Date.now());
}

/** A client carrying only a bearer token. */
function bearer(token: string): Client {
  const client = new Client(server.url);
  client.bearer = token;
  return client;
}

describe('super users', () => {
  it('impersonate anyone: the answer names the target, the impersonator and the rights', async () => {
    const target = await createActiveUser(server, { fullname: 'Imper Sonated' });
    const res = await (await asRoot()).post('/impersonate', { groupId: target.id });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      token: expect.any(String),
      user: {
        id: target.email,
        profile: expect.objectContaining({ id: target.id }),
        disallowDataModification: false,
        impersonatables: [],
        impersonator: { id: root.email, isSuperUser: true, isPrivilegedUser: true, profile: expect.objectContaining({ id: root.id }) },
      },
    });
    const as = bearer(res.body.token);
    expect((await as.get('/profiles')).body.profiles[0].id).toBe(target.id);
    expect(await server.service.db('audit_log').where({ action: 'impersonate', target: target.id }).pluck('actor')).toEqual([root.id]);
  });

  it('may impersonate by email, and may change data while impersonating', async () => {
    const target = await createActiveUser(server);
    const res = await (await asRoot()).post('/impersonate', { groupId: target.email });
    expect(res.body.user.profile.id).toBe(target.id);
    expect((await bearer(res.body.token).post('/activatable', { id: 'whoever@example.org' })).status).toBe(200);
  });

  it('cannot impersonate another super user', async () => {
    const other = await createActiveUser(server, { role: 'superuser', fullname: 'Other Root' });
    const res = await (await asRoot()).post('/impersonate', { groupId: other.id });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ status: 403, name: 'ForbiddenError', message: 'Super users cannot be impersonated', details: { reqId: expect.any(String) } });
  });

  it('never change credentials while impersonating', async () => {
    const target = await createActiveUser(server);
    const as = bearer((await (await asRoot()).post('/impersonate', { groupId: target.id })).body.token);
    for (const [method, path, body] of [
      ['POST', '/logout-all-devices', undefined],
      ['POST', '/user/confirm', { alternate: 'new@example.org' }],
      ['PUT', '/activatelink', { email: 'new@example.org', token: '123456' }],
    ] as const) {
      const res = await as.request(method, path, body);
      expect(res.status, path).toBe(403);
      expect(res.body.message).toBe('Credentials cannot be changed while impersonating');
    }
  });
});

describe('impersonators named by a group', () => {
  it('may impersonate a person whose own group names them, directly or through a group they belong to', async () => {
    const organiser = await createActiveUser(server, { fullname: 'Venue Organiser' });
    const helper = await createActiveUser(server, { fullname: 'Venue Helper' });
    const author = await createActiveUser(server, { fullname: 'Venue Author' });
    const outsider = await createActiveUser(server, { fullname: 'Out Sider' });
    await group('Conf.org/2027/Organisers', [helper.id], []);
    await group(outsider.id, [outsider.email], [organiser.email, 'Conf.org/2027/Organisers']);

    const org = async () => (await loggedIn(server, organiser.email)).client;
    // The profile's own group names the organiser by email.
    const asOutsider = await (await org()).post('/impersonate', { groupId: outsider.id });
    expect(asOutsider.status).toBe(200);
    expect(asOutsider.body.user).toMatchObject({ disallowDataModification: true, impersonatables: [outsider.id] });
    expect((await (await org()).post('/impersonate', { groupId: outsider.email })).status).toBe(200);
    // Through membership of the organisers group.
    const help = async () => (await loggedIn(server, helper.email)).client;
    expect((await (await help()).post('/impersonate', { groupId: outsider.id })).status).toBe(200);
    expect((await (await help()).post('/impersonate', { groupId: author.id })).status).toBe(403);
  });

  it("a group's impersonators never reach its members: membership grants no power over a person", async () => {
    const organiser = await createActiveUser(server, { fullname: 'Venue Organiser' });
    const author = await createActiveUser(server, { fullname: 'Venue Author' });
    await group('Conf.org/2028/Authors', [author.id, author.email], [organiser.id]);
    const res = await (await loggedIn(server, organiser.email)).client.post('/impersonate', { groupId: author.id });
    expect(res.status).toBe(403);
    expect(res.body.message).toBe(`You are not allowed to impersonate ${author.id}`);
  });

  it('anyone else is refused, and a group id is not a person', async () => {
    const nobody = (await loggedIn(server, (await createActiveUser(server)).email)).client;
    const target = await createActiveUser(server);
    const refused = await nobody.post('/impersonate', { groupId: target.id });
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe(`You are not allowed to impersonate ${target.id}`);
    // The same refusal whoever the target is: it tells nobody who the super users are, or whose
    // profile is blocked.
    const blocked = await createActiveUser(server);
    await server.service.db('profiles').where({ id: blocked.id }).update({ state: 'Blocked' });
    for (const other of [root.id, blocked.id]) {
      const answer = await nobody.post('/impersonate', { groupId: other });
      expect([answer.status, answer.body.message]).toEqual([403, `You are not allowed to impersonate ${other}`]);
    }
    await group('Conf.org/2027/Reviewers', [target.id], []);
    const aGroup = await (await asRoot()).post('/impersonate', { groupId: 'Conf.org/2027/Reviewers' });
    expect(aGroup.status).toBe(400);
    expect((await (await asRoot()).post('/impersonate', { groupId: 'No/Such/Group' })).body).toEqual({
      status: 404,
      name: 'NotFoundError',
      message: 'Group Not Found: No/Such/Group',
      details: { reqId: expect.any(String) },
    });
  });

  it('cannot change data while impersonating', async () => {
    const organiser = await createActiveUser(server);
    const author = await createActiveUser(server);
    await group(author.id, [author.email], [organiser.id]);
    const token = (await (await loggedIn(server, organiser.email)).client.post('/impersonate', { groupId: author.id })).body.token;
    const res = await bearer(token).post('/activatable', { id: 'someone@example.org' });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ status: 403, name: 'ForbiddenError', message: 'Data cannot be modified while impersonating', details: { reqId: expect.any(String) } });
    expect((await bearer(token).get('/profiles')).status).toBe(200);
  });
});

describe('nesting, exit and ending', () => {
  it('keeps one nested level and refuses a third', async () => {
    const middle = await createActiveUser(server, { fullname: 'Middle Man' });
    const inner = await createActiveUser(server, { fullname: 'Inner Most' });
    const third = await createActiveUser(server, { fullname: 'Third Level' });
    await group(inner.id, [inner.email], [middle.id]);
    await group(third.id, [third.email], [inner.id]);
    const first = bearer((await (await asRoot()).post('/impersonate', { groupId: middle.id })).body.token);
    const nested = await first.post('/impersonate', { groupId: inner.id });
    expect(nested.status).toBe(200);
    expect(nested.body.user.impersonator).toMatchObject({ id: middle.email, impersonator: { id: root.email, isSuperUser: true } });
    expect(nested.body.user.impersonator.impersonator.impersonator).toBeUndefined();
    const deeper = await bearer(nested.body.token).post('/impersonate', { groupId: third.id });
    expect(deeper.status).toBe(403);
    expect(deeper.body.message).toBe('Impersonation can be nested only once');
  });

  it('a nested impersonation is its first impersonator\'s too: rights over B do not reach whom B may impersonate', async () => {
    const first = await createActiveUser(server, { fullname: 'First Impersonator' });
    const middle = await createActiveUser(server, { fullname: 'Middle Grantee' });
    const last = await createActiveUser(server, { fullname: 'Last Target' });
    await group(middle.id, [middle.email], [first.id]);
    await group(last.id, [last.email], [middle.id]);
    const asFirst = (await loggedIn(server, first.email)).client;
    expect((await asFirst.post('/impersonate', { groupId: last.id })).status).toBe(403);
    const asMiddle = bearer((await asFirst.post('/impersonate', { groupId: middle.id })).body.token);
    const nested = await asMiddle.post('/impersonate', { groupId: last.id });
    expect(nested.status).toBe(403);
    expect(nested.body.message).toBe(`You are not allowed to impersonate ${last.id}`);
    // Given the right too, the first impersonator reaches them through the middle one as well.
    await group(last.id, [last.email], [middle.id, first.id]);
    const sideline = await createActiveUser(server, { fullname: 'Middle Only' });
    await group(sideline.id, [sideline.email], [middle.id]);
    const reached = await asMiddle.post('/impersonate', { groupId: last.id });
    expect(reached.status).toBe(200);
    // Whom the middle one alone may impersonate is not listed: the first impersonator may not.
    expect(reached.body.user.impersonatables).toEqual([last.id]);
    expect((await asMiddle.post('/impersonate', { groupId: sideline.id })).status).toBe(403);
    // Granted to each through another of the person's ids (a username of theirs): listed, once, by profile id.
    const twoIds = await createActiveUser(server, { fullname: 'Two Ids' });
    const other = await new AccountsRepository(server.service.db).emails.addUsername(twoIds.id, '~Second_Name', 1);
    await group(twoIds.id, [twoIds.email], [middle.id]);
    await group(other, [], [first.id]);
    const both = await asMiddle.post('/impersonate', { groupId: twoIds.id });
    expect(both.status).toBe(200);
    expect([...both.body.user.impersonatables].sort()).toEqual([last.id, twoIds.id].sort());
  });

  it('lists only people a grant lets the caller impersonate: not a super user whose group names them', async () => {
    const caller = await createActiveUser(server, { fullname: 'Named By A Super User' });
    const boss = await createActiveUser(server, { role: 'superuser', fullname: 'Naming Super User' });
    const granted = await createActiveUser(server, { fullname: 'Granting Person' });
    await group(boss.id, [boss.email], [caller.id]);
    await group(granted.id, [granted.email], [caller.id]);
    // The caller's own group naming a group the caller is in: never themself.
    await group('Self.org/Helpers', [caller.id], []);
    await group(caller.id, [caller.email], ['Self.org/Helpers']);
    const asCaller = (await loggedIn(server, caller.email)).client;
    const answer = await asCaller.post('/impersonate', { groupId: granted.id });
    expect(answer.status).toBe(200);
    expect(answer.body.user.impersonatables).toEqual([granted.id]);
    expect((await (await loggedIn(server, caller.email)).client.post('/impersonate', { groupId: boss.id })).status).toBe(403);
  });

  it('exit returns to the impersonator\'s own session', async () => {
    const target = await createActiveUser(server);
    const { client } = await loggedIn(server, root.email);
    const imp = await client.post('/impersonate', { groupId: target.id });
    expect((await client.get('/profiles')).body.profiles[0].id).toBe(target.id);
    const back = await client.post('/impersonate/exit');
    expect(back.status).toBe(200);
    expect(back.body.user.profile.id).toBe(root.id);
    expect((await client.get('/profiles')).body.profiles[0].id).toBe(root.id);
    expect((await bearer(imp.body.token).get('/profiles')).status).toBe(401);
    expect((await client.post('/impersonate/exit')).status).toBe(400);
  });

  it('exits sent at once: one resumes the session, the others are 401, and the session lives on', async () => {
    const target = await createActiveUser(server);
    const { client } = await loggedIn(server, root.email);
    await client.post('/impersonate', { groupId: target.id });
    const cookie = cookieHeader(client.jar);
    const exits = await Promise.all(Array.from({ length: 12 }, () => fetch(`${server.url}/impersonate/exit`, { method: 'POST', headers: { cookie } })));
    expect(exits.map((res) => res.status).sort()).toEqual([200, ...Array<number>(11).fill(401)]);
    // The one resumed refresh cookie is the session's only one: it refreshes, and the session holds.
    const resumed = new Client(server.url);
    keepCookies(resumed.jar, exits.find((res) => res.status === 200)!);
    expect((await resumed.post('/refreshToken')).status).toBe(200);
    expect((await resumed.get('/profiles')).body.profiles[0].id).toBe(root.id);
    expect((await resumed.post('/refreshToken')).status).toBe(200);
  });

  it('the target\'s logout-all or password reset ends the impersonation', async () => {
    const target = await createActiveUser(server);
    const imp = bearer((await (await asRoot()).post('/impersonate', { groupId: target.id })).body.token);
    expect((await imp.get('/profiles')).status).toBe(200);
    await (await loggedIn(server, target.email)).client.post('/logout-all-devices');
    expect((await imp.get('/profiles')).status).toBe(401);

    const again = bearer((await (await asRoot()).post('/impersonate', { groupId: target.id })).body.token);
    expect((await again.get('/profiles')).status).toBe(200);
    await new Client(server.url).post('/resettable', { id: target.email, token: 'dev-ok' });
    const link = /token=([\w-]+)/.exec((await lastMailTo(server.dataDir, target.email)).text)?.[1];
    expect((await new Client(server.url).request('PUT', `/reset/${link}`, { password: 'Reset-Ends-It1' })).status).toBe(200);
    expect((await again.get('/profiles')).status).toBe(401);
  });

  it('names missing, unknown and empty fields', async () => {
    expect((await (await asRoot()).post('/impersonate', {})).body).toMatchObject({ name: 'MissingRequiredError', details: { path: 'groupId' } });
    expect((await (await asRoot()).post('/impersonate', { groupId: '' })).body).toMatchObject({ name: 'ValidationError', details: { path: 'groupId' } });
    expect((await (await asRoot()).post('/impersonate', { groupId: 'x', as: 'y' })).body).toMatchObject({ name: 'AdditionalPropertiesError' });
    expect((await new Client(server.url).post('/impersonate', { groupId: 'x' })).status).toBe(401);
  });
});
