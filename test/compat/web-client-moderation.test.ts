/**
 * The web client's moderation page (`app/user/moderation/UserModerationTab.js`), where it calls
 * what this service offers: its profile search (`:350-395`), `GET /profiles/search` with `es`,
 * `limit`, `offset`, and, outside the "Needs Moderation" queue, `withBlocked` and `trash` to see
 * blocked and deleted profiles too; and its decisions, `POST /profile/moderate` (`:187-190`).
 * What the page needs beyond these (its queues' listing, `/tags`, the `<SUPER_USER>/Support`
 * group) is in docs/compatibility.md.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
let moderator: Client;
let person: Client;
const ids: Record<'active' | 'blocked' | 'deleted', string> = { active: '', blocked: '', deleted: '' };

beforeAll(async () => {
  server = await startServer();
  moderator = (await loggedIn(server, (await createActiveUser(server, { role: 'moderator' })).email)).client;
  person = (await loggedIn(server, (await createActiveUser(server, { fullname: 'Plain Reader' })).email)).client;
  for (const state of ['active', 'blocked', 'deleted'] as const) ids[state] = (await createActiveUser(server, { fullname: 'Bob Jones' })).id;
  for (const [id, decision] of [[ids.blocked, 'block'], [ids.deleted, 'delete']]) {
    const res = await moderator.post('/profile/moderate', { id, decision });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }
});
afterAll(() => server.close());

/** The page's search for a name outside the moderation queue, as it sends it. */
const pageSearch = (client: Client) => client.get('/profiles/search?es=true&fullname=bob%20jones&limit=15&offset=0&trash=true&withBlocked=true');

it("finds a moderator every profile of a name, blocked and deleted ones included, as the page asks", async () => {
  const res = await pageSearch(moderator);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.profiles.map((p: { id: string }) => p.id).sort()).toEqual(Object.values(ids).sort());
  // Without them asked for, the search leaves them out, as the real platform's does.
  const plain = await moderator.get('/profiles/search?es=true&fullname=bob%20jones&limit=15&offset=0');
  expect(plain.body.profiles.map((p: { id: string }) => p.id)).toEqual([ids.active]);
});

it('leaves blocked and deleted profiles out of anyone else’s search, whatever it asks', async () => {
  const res = await pageSearch(person);
  expect(res.status).toBe(200);
  expect(res.body.profiles.map((p: { id: string }) => p.id)).toEqual([ids.active]);
});

it('pages with limit and offset', async () => {
  const first = await moderator.get('/profiles/search?fullname=bob%20jones&limit=2&offset=0&trash=true&withBlocked=true');
  const second = await moderator.get('/profiles/search?fullname=bob%20jones&limit=2&offset=2&trash=true&withBlocked=true');
  expect([...first.body.profiles, ...second.body.profiles].map((p: { id: string }) => p.id).sort()).toEqual(Object.values(ids).sort());
  expect(first.body.profiles).toHaveLength(2);
  // The page's pager and its "(n)" read `count`: every match, not the page's.
  expect([first.body.count, second.body.count]).toEqual([3, 3]);
  expect((await pageSearch(person)).body.count).toBe(1);
});
