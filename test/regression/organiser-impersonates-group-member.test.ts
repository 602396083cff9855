/**
 * Defect (issue 12, item 2): a venue organiser could impersonate anyone. The organiser added
 * `~Victim_Person1` to their venue's group (`POST /groups/members`); the venue's groups name the
 * organisers in their `impersonators`, and a group's impersonators could impersonate its
 * members, so `POST /impersonate {groupId: "~Victim_Person1"}` answered 200 with a session as
 * the victim. Adding a person to a group must never grant power over that person: only a
 * person's own `~` group can name who may impersonate them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';
import { venueConfig } from '../helpers/venue.ts';

let server: TestServer;
let root: Client;
let organiser: Client;
const VENUE = 'Victimised.org/2027';

beforeAll(async () => {
  server = await startServer();
  const admin = await createActiveUser(server, { role: 'superuser' });
  root = (await loggedIn(server, admin.email)).client;
  expect((await root.post('/venues', venueConfig(VENUE))).status).toBe(200);
  const org = await createActiveUser(server, { fullname: 'Venue Organiser' });
  expect((await root.post('/groups/members', { id: `${VENUE}/Program_Chairs`, members: [org.id] })).status).toBe(200);
  organiser = (await loggedIn(server, org.email)).client;
});
afterAll(async () => {
  await server.close();
});

describe('an organiser who adds a person to a venue group', () => {
  it('gains no power to impersonate them, by id or by email, through any of the venue groups', async () => {
    const victim = await createActiveUser(server, { fullname: 'Victim Person' });
    for (const group of [VENUE, `${VENUE}/Reviewers`, `${VENUE}/Authors`, `${VENUE}/Ethics_Reviewers`, `${VENUE}/Program_Chairs`]) {
      const added = await organiser.post('/groups/members', { id: group, members: [victim.id, victim.email] });
      expect(added.status, group).toBe(200);
    }
    for (const groupId of [victim.id, victim.email]) {
      const res = await organiser.post('/impersonate', { groupId });
      expect(res.status, groupId).toBe(403);
      expect(res.body).toEqual({ status: 403, name: 'ForbiddenError', message: `You are not allowed to impersonate ${groupId}`, details: { reqId: expect.any(String) } });
    }
    expect(await server.service.db('audit_log').where({ action: 'impersonate', target: victim.id }).count({ n: '*' })).toEqual([{ n: 0 }]);
  });

  it('nor by adding the victim under a venue group, nor the victim\'s own group as a member', async () => {
    const victim = await createActiveUser(server, { fullname: 'Second Victim' });
    // The victim's own group as a member of a group naming the organisers: still no power.
    expect((await organiser.post('/groups/members', { id: `${VENUE}/Reviewers`, members: [victim.id] })).status).toBe(200);
    // The organiser cannot touch the victim's own group, which alone could name impersonators.
    const own = await organiser.post('/groups/members', { id: victim.id, members: ['~'] });
    expect(own.status).toBe(403);
    expect((await organiser.post('/impersonate', { groupId: victim.id })).status).toBe(403);
  });
});
