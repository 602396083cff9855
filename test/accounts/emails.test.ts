import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { lastMailTo } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, HISTORY, loggedIn, PASSWORD, registerAndGetToken } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

async function codeMailedTo(email: string, subject = 'Email confirmation'): Promise<string> {
  const mail = await lastMailTo(server.dataDir, email);
  expect(mail.subject).toBe(subject);
  const code = /code: (\d{6})/.exec(mail.text)?.[1];
  if (!code) throw new Error(`no code in ${mail.text}`);
  return code;
}

const wrong = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

describe('alternate emails', () => {
  it('a signed-in user adds an address and confirms it with the mailed code', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    const asked = await client.post('/user/confirm', { alternate: 'Second@Example.org', username: user.id });
    expect(asked.status).toBe(200);
    expect(asked.body).toEqual({ alternate: 'second@example.org' });
    const code = await codeMailedTo('second@example.org');

    const confirmed = await client.request('PUT', '/activatelink', { email: 'second@example.org', token: code });
    expect(confirmed.status).toBe(200);
    expect(confirmed.body).toEqual({ confirmedEmail: 'second@example.org' });
    const me = (await client.get('/profiles')).body.profiles[0];
    expect(me.content.emailsConfirmed.sort()).toEqual([user.email, 'second@example.org'].sort());

    const reused = await client.request('PUT', '/activatelink', { email: 'second@example.org', token: code });
    expect(reused.status).toBe(400);
    expect(reused.body.message).toBe('Token is not valid');
  });

  it('a guest without an activation token is told to pass one', async () => {
    const res = await new Client(server.url).post('/user/confirm', { alternate: 'x@example.org' });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('Guest user must pass activation token');
    const link = await new Client(server.url).request('PUT', '/activatelink', { email: 'x@example.org', token: '123456' });
    expect(link.body.message).toBe('Guest user must pass activation token');
  });

  it('a guest activating adds an institutional address, which makes the profile Active Institutional', async () => {
    const { token } = await registerAndGetToken(server, { email: 'guest@example.org', fullname: 'Guest Activating' });
    const http = new Client(server.url);
    expect((await http.post(`/user/confirm/${token}`, { alternate: 'guest@cam.ac.uk' })).body).toEqual({ alternate: 'guest@cam.ac.uk' });
    const code = await codeMailedTo('guest@cam.ac.uk');
    expect((await http.request('PUT', `/activatelink/${token}`, { email: 'guest@cam.ac.uk', token: code })).body).toEqual({
      confirmedEmail: 'guest@cam.ac.uk',
    });
    const activated = await http.request('PUT', `/activate/${token}`, { content: { history: HISTORY } });
    expect(activated.body.user.profile.state).toBe('Active Institutional');
  });

  it('the signup code confirms the registration address during activation', async () => {
    const { token, code } = await registerAndGetToken(server, { email: 'signup-code@example.org', fullname: 'Code Typer' });
    const res = await new Client(server.url).request('PUT', `/activatelink/${token}`, { email: 'signup-code@example.org', token: code });
    expect(res.body).toEqual({ confirmedEmail: 'signup-code@example.org' });
  });

  it('five wrong codes void the token, each refusal saying how many tries are left', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    await client.post('/user/confirm', { alternate: 'guessed@example.org' });
    const code = await codeMailedTo('guessed@example.org');
    for (let i = 0; i < 5; i += 1) {
      const res = await client.request('PUT', '/activatelink', { email: 'guessed@example.org', token: wrong(code) });
      // Each refusal says how many tries are left, for the page's "4 tries left".
      expect(res.body).toMatchObject({ status: 400, message: 'Token is not valid', details: { path: 'token', triesLeft: 4 - i } });
    }
    const right = await client.request('PUT', '/activatelink', { email: 'guessed@example.org', token: code });
    expect(right.status).toBe(400);
    expect(right.body.message).toBe('Token is not valid');
    expect(await server.service.db('profile_emails').where({ email: 'guessed@example.org' })).toEqual([]);
  });

  it('another user cannot use the code', async () => {
    const owner = await createActiveUser(server);
    const other = await createActiveUser(server);
    await (await loggedIn(server, owner.email)).client.post('/user/confirm', { alternate: 'mine@example.org' });
    const code = await codeMailedTo('mine@example.org');
    const { client } = await loggedIn(server, other.email);
    const res = await client.request('PUT', '/activatelink', { email: 'mine@example.org', token: code });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('Token is not valid');
  });

  it('asking for an address with someone else\'s username is forbidden', async () => {
    const owner = await createActiveUser(server);
    const other = await createActiveUser(server);
    const { client } = await loggedIn(server, other.email);
    const res = await client.post('/user/confirm', { alternate: 'a@example.org', username: owner.id });
    expect(res.status).toBe(403);
    expect(res.body.name).toBe('ForbiddenError');
  });
});

describe('merging a duplicate profile', () => {
  it('folds the other profile into the one that asked; the merged id still resolves', async () => {
    const keeper = await createActiveUser(server, { fullname: 'Marie Curie' });
    const duplicate = await createActiveUser(server, { fullname: 'Marie Sklodowska' });
    await server.service.db('profiles').where({ id: duplicate.id }).update({
      content: JSON.stringify({
        names: [{ first: 'Marie', last: 'Sklodowska', fullname: 'Marie Sklodowska', username: duplicate.id, preferred: true }],
        history: [{ position: 'Professor', institution: { name: 'Sorbonne', domain: 'sorbonne.fr' }, start: 1906 }],
        expertise: [{ keywords: ['radioactivity'], start: 1903 }],
      }),
    });
    const dupSession = await loggedIn(server, duplicate.email);
    const { client } = await loggedIn(server, keeper.email);

    await client.post('/user/confirm', { alternate: duplicate.email });
    const code = await codeMailedTo(duplicate.email, 'Duplicate Profile Found');
    // Only the profile that asked can finish.
    const stranger = await loggedIn(server, (await createActiveUser(server)).email);
    expect((await stranger.client.request('PUT', '/activatelink', { email: duplicate.email, token: code })).status).toBe(400);

    const res = await client.request('PUT', '/activatelink', { email: duplicate.email, token: code });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: keeper.id, signatures: [keeper.id], state: 'Active' });
    expect(res.body.content.names.map((n: { username: string }) => n.username)).toEqual([keeper.id, duplicate.id]);
    expect(res.body.content.history).toHaveLength(1);
    expect(res.body.content.expertise).toEqual([{ keywords: ['radioactivity'], start: 1903 }]);
    expect(res.body.content.emailsConfirmed.sort()).toEqual([keeper.email, duplicate.email].sort());

    const merged = await server.service.db('profiles').where({ id: duplicate.id }).first();
    expect(merged).toMatchObject({ state: 'Merged', merged_into: keeper.id });
    const resolved = await client.get(`/profiles?id=${encodeURIComponent(duplicate.id)}`);
    expect(resolved.body.profiles[0].id).toBe(keeper.id);
    expect((await dupSession.client.get('/profiles')).status).toBe(401);
    const members = await server.service.db('group_members').where({ group_id: duplicate.email }).pluck('member');
    expect(members).toEqual([keeper.id]);

    // The duplicate's address and username now sign in to the survivor.
    const login = await new Client(server.url).post('/login', { id: duplicate.id, password: PASSWORD });
    expect(login.body.user.profile.id).toBe(keeper.id);
    expect((await server.service.db('audit_log').where({ action: 'merge', target: duplicate.id })).length).toBe(1);
    // The merged profile's usernames still count for new tilde ids.
    expect((await new Client(server.url).get('/tildeusername?first=Marie&last=Sklodowska')).body.username).toBe('~Marie_Sklodowska2');
  });

  it('the survivor keeps its preferred address, though the other profile\'s is older', async () => {
    const older = await createActiveUser(server, { fullname: 'Old Account' });
    const keeper = await createActiveUser(server, { fullname: 'New Account' });
    const { client } = await loggedIn(server, keeper.email);
    await client.post('/user/confirm', { alternate: older.email });
    const res = await client.request('PUT', '/activatelink', { email: older.email, token: await codeMailedTo(older.email, 'Duplicate Profile Found') });
    expect(res.status).toBe(200);
    expect(res.body.content.preferredEmail).toBe(keeper.email);
    expect((await client.get('/profiles')).body.profiles[0].content.preferredEmail).toBe(keeper.email);
    const login = await new Client(server.url).post('/login', { id: older.email, password: PASSWORD });
    expect([login.body.user.id, login.body.user.profile.preferredEmail]).toEqual([older.email, keeper.email]);
  });

  it.each(['Limited', 'Rejected', 'Needs Moderation', 'Blocked'])('never folds a profile a moderator decided on or waits on (%s), and changes nothing', async (state) => {
    const decided = await createActiveUser(server, { fullname: 'Decided Upon' });
    const live = await createActiveUser(server, { fullname: 'Live Person' });
    const { client } = await loggedIn(server, live.email);
    await server.service.db('profiles').where({ id: decided.id }).update({ state });
    const before = await server.service.db('profile_emails').whereIn('profile_id', [decided.id, live.id]).orderBy('email').select('email', 'profile_id');
    await client.post('/user/confirm', { alternate: decided.email });
    const refused = await client.request('PUT', '/activatelink', { email: decided.email, token: await codeMailedTo(decided.email, 'Duplicate Profile Found') });
    expect([refused.status, refused.body.message]).toEqual([400, 'These profiles cannot be merged']);
    expect(await server.service.db('profiles').where({ id: decided.id }).first()).toMatchObject({ state, merged_into: null });
    expect(await server.service.db('profile_emails').whereIn('profile_id', [decided.id, live.id]).orderBy('email').select('email', 'profile_id')).toEqual(before);
  });
});
