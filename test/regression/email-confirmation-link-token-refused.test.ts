/**
 * Found by an independent review of the accounts work. The confirmation mail links to
 * `/confirm?token=…`, and the spec's path is `PUT /activatelink/{token}`; the service did not take
 * that link token. It does now, for the signed-in user the mail was for and nobody else, and the
 * confirmed address gets its group as the registration address does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastMailTo } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
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
});
