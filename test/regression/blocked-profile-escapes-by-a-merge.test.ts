/**
 * Found by an independent attack review. A profile a moderator had blocked (or deleted) was
 * merged into a fresh account of its owner's: signed in as the new one, they asked to confirm
 * the blocked profile's address, typed the mailed code, and its emails, usernames and groups
 * moved to a live profile, the block undone. A blocked or deleted profile is merged into nothing.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { lastMailTo } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

it.each(['block', 'delete'] as const)('a profile after %s stays as the moderator left it', async (decision) => {
  const moderator = (await loggedIn(server, (await createActiveUser(server, { role: 'moderator' })).email)).client;
  const settled = await createActiveUser(server);
  expect((await moderator.post('/profile/moderate', { id: settled.id, decision })).status).toBe(200);
  const fresh = await createActiveUser(server);
  const { client } = await loggedIn(server, fresh.email);
  await client.post('/user/confirm', { alternate: settled.email });
  const mail = await lastMailTo(server.dataDir, settled.email);
  const code = /code: (\d{6})/.exec(mail.text)?.[1];
  expect(code).toBeDefined();
  expect((await client.request('PUT', '/activatelink', { email: settled.email, token: code })).status).toBe(400);
  const row = await server.service.db('profiles').where({ id: settled.id }).first('state', 'merged_into');
  expect(row).toMatchObject({ state: decision === 'block' ? 'Blocked' : expect.any(String), merged_into: null });
  expect(await server.service.db('profile_usernames').where({ username: settled.id }).pluck('profile_id')).toEqual([settled.id]);
});
