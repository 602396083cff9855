/**
 * Found by an independent review of venue authorisation. `GET /groups` showed a venue group with
 * all its members to anyone in it: a reviewer listed every reviewer of the venue, and an author
 * group would list every author of every submission. A member now sees the group with themselves
 * as its only member (enough for the web client, which asks which groups a person is in); the
 * venue's organisers and super users see everyone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';
import { venueConfig } from '../helpers/venue.ts';

const VENUE = 'Blind.org/2027';
const REVIEWERS = `${VENUE}/Reviewers`;
let server: TestServer;
let root: Client;
beforeAll(async () => {
  server = await startServer();
  const admin = await createActiveUser(server, { role: 'superuser' });
  root = (await loggedIn(server, admin.email)).client;
  expect((await root.post('/venues', venueConfig(VENUE))).status).toBe(200);
});
afterAll(async () => {
  await server.close();
});

describe('a venue group', () => {
  it('shows a member only themselves, its organisers everyone, and a stranger nothing', async () => {
    const [one, two] = [await createActiveUser(server, { fullname: 'Reviewer One' }), await createActiveUser(server, { fullname: 'Reviewer Two' })];
    expect((await root.post('/groups/members', { id: REVIEWERS, members: [one.id, two.id] })).status).toBe(200);
    const chair = await createActiveUser(server, { fullname: 'Program Chair' });
    expect((await root.post('/groups/members', { id: `${VENUE}/Program_Chairs`, members: [chair.id] })).status).toBe(200);

    const reviewer = (await loggedIn(server, one.email)).client;
    const byId = await reviewer.get(`/groups?id=${encodeURIComponent(REVIEWERS)}`);
    expect(byId.status).toBe(200);
    expect(byId.body.groups.map((g: { id: string; members: string[] }) => [g.id, g.members])).toEqual([[REVIEWERS, [one.id]]]);
    const byMember = await reviewer.get(`/groups?member=${encodeURIComponent(one.id)}`);
    expect(byMember.body.groups.find((g: { id: string }) => g.id === REVIEWERS)?.members).toEqual([one.id]);
    // Nor which groups another reviewer is in.
    expect((await reviewer.get(`/groups?member=${encodeURIComponent(two.id)}`)).body.groups).toEqual([]);
    const byPrefix = await reviewer.get(`/groups?prefix=${encodeURIComponent(VENUE)}`);
    expect(JSON.stringify(byPrefix.body)).not.toContain(two.id);

    const organiser = (await loggedIn(server, chair.email)).client;
    expect((await organiser.get(`/groups?id=${encodeURIComponent(REVIEWERS)}`)).body.groups[0].members).toEqual([one.id, two.id]);
    const stranger = (await loggedIn(server, (await createActiveUser(server)).email)).client;
    expect((await stranger.get(`/groups?id=${encodeURIComponent(REVIEWERS)}`)).status).toBe(404);
  });
});
