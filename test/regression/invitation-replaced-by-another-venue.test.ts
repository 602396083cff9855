/**
 * Defect (issue 12, item 3): one venue's organiser could replace another venue's invitation by
 * posting `POST /invitations` with the other venue's invitation id and their own `domain`. The
 * only checks were "the caller organises `domain`" and "the id starts with `domain/`", so the
 * organiser of `Conf.org` could overwrite `Conf.org/2027/-/Submission` (the invitation of the
 * venue `Conf.org/2027`), moving it into their own domain, or add new invitations inside it.
 * An invitation belongs to its venue: replacing it needs that venue's rights.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';
import { venueConfig } from '../helpers/venue.ts';
import { storedInvitation } from './helpers.ts';

let server: TestServer;
let root: Client;
let attacker: Client;
let owner: Client;
const OUTER = 'Conf.org';
const VICTIM = 'Conf.org/2027';
const SUBMISSION = `${VICTIM}/-/Submission`;

async function organiserOf(venue: string, fullname: string): Promise<Client> {
  const person = await createActiveUser(server, { fullname });
  expect((await root.post('/groups/members', { id: `${venue}/Program_Chairs`, members: [person.id] })).status).toBe(200);
  return (await loggedIn(server, person.email)).client;
}

const stored = (id: string) => storedInvitation(root, id);

beforeAll(async () => {
  server = await startServer();
  const admin = await createActiveUser(server, { role: 'superuser' });
  root = (await loggedIn(server, admin.email)).client;
  for (const venue of [OUTER, VICTIM, 'Other.org']) expect((await root.post('/venues', venueConfig(venue))).status).toBe(200);
  attacker = await organiserOf(OUTER, 'Outer Organiser');
  owner = await organiserOf(VICTIM, 'Victim Organiser');
});
afterAll(async () => {
  await server.close();
});

describe("another venue's invitation", () => {
  it('cannot be replaced under the attacker\'s own domain, even when that domain is a prefix of its id', async () => {
    const before = await stored(SUBMISSION);
    const res = await attacker.post('/invitations', { id: SUBMISSION, domain: OUTER, form: {}, invitees: ['~'] });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ status: 403, name: 'ForbiddenError', message: `Only the organisers of ${VICTIM} can do this`, details: { reqId: expect.any(String) } });
    expect(await stored(SUBMISSION)).toEqual(before);
    // Nor from a venue that is no prefix at all.
    const other = await organiserOf('Other.org', 'Other Organiser');
    expect((await other.post('/invitations', { id: SUBMISSION, domain: 'Other.org', form: {} })).status).toBe(400);
    expect((await other.post('/invitations', { id: SUBMISSION, domain: VICTIM, form: {} })).status).toBe(403);
    expect(await stored(SUBMISSION)).toEqual(before);
  });

  it('gets no new invitations inside it from the organisers of an enclosing venue', async () => {
    const res = await attacker.post('/invitations', { id: `${VICTIM}/-/Planted`, domain: OUTER, form: {} });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ name: 'ValidationError', details: { path: 'id' } });
    expect(await stored(`${VICTIM}/-/Planted`)).toBeUndefined();
    // Their own venue's invitations are still theirs.
    expect((await attacker.post('/invitations', { id: `${OUTER}/-/Own`, domain: OUTER, form: {} })).status).toBe(200);
  });

  it('is not a reply target, nor readable, and its venue groups are not the attacker\'s', async () => {
    const reply = await attacker.post('/invitations', { id: `${OUTER}/-/Reply`, domain: OUTER, form: {}, replyTo: SUBMISSION });
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({ name: 'ValidationError', details: { path: 'replyTo' } });
    expect((await attacker.get(`/invitations?id=${encodeURIComponent(SUBMISSION)}`)).status).toBe(403);
    const join = await attacker.post('/groups/members', { id: `${VICTIM}/Program_Chairs`, members: ['~Anyone1'] });
    expect(join.status).toBe(403);
    // A group that is not a venue is no domain.
    expect((await root.post('/invitations', { id: `${OUTER}/Program_Chairs/-/X`, domain: `${OUTER}/Program_Chairs`, form: {} })).status).toBe(400);
  });

  it('is still replaced by its own organisers', async () => {
    const res = await owner.post('/invitations', { id: SUBMISSION, domain: VICTIM, form: {}, invitees: ['~'] });
    expect(res.status).toBe(200);
    expect((await stored(SUBMISSION)).domain).toBe(VICTIM);
  });
});
