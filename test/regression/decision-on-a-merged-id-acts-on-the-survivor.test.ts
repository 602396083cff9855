/**
 * Found by an independent attack review. A merge moves the merged profile's usernames, its id
 * among them, to the profile it was merged into, so a moderator's decision naming the merged id
 * found the survivor and acted on it: blocking a merged account blocked the person who had kept
 * theirs. A decision names a profile by its own id first, and a merged one takes none (400).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { confirmAddress, createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

it('a decision naming a merged profile’s id is refused, and the survivor stays as it was', async () => {
  const keeper = await createActiveUser(server);
  const duplicate = await createActiveUser(server);
  const { client } = await loggedIn(server, keeper.email);
  await confirmAddress(server, client, duplicate.email);
  expect(await server.service.db('profiles').where({ id: duplicate.id }).first('state')).toEqual({ state: 'Merged' });

  const moderator = (await loggedIn(server, (await createActiveUser(server, { role: 'moderator' })).email)).client;
  const decided = await moderator.post('/profile/moderate', { id: duplicate.id, decision: 'block' });
  expect(decided.status).toBe(400);
  expect(await server.service.db('profiles').where({ id: keeper.id }).first('state')).toEqual({ state: 'Active' });
  // The survivor is still decided on by its own id.
  expect((await moderator.post('/profile/moderate', { id: keeper.id, decision: 'block' })).status).toBe(200);
});
