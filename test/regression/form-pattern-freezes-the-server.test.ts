/**
 * Found by an attack review of issue 12: an organiser saved an invitation whose field regex was
 * `(a|a)*c`, and a note of a few dozen `a`s then held the server (a backtracking regex is
 * exponential in such a value: 25 characters took 4 s, every one more doubled it, and every other
 * request waited). Form patterns now run on RE2 (linear time); a pattern RE2 cannot run
 * (backreferences, lookaround) is refused when the form is saved.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';
import { venueConfig } from '../helpers/venue.ts';

let server: TestServer;
let root: Client;
const VENUE = 'Patterns.org/2027';
const INVITATION = `${VENUE}/-/Comment`;

beforeAll(async () => {
  server = await startServer();
  const admin = await createActiveUser(server, { role: 'superuser' });
  root = (await loggedIn(server, admin.email)).client;
  expect((await root.post('/venues', venueConfig(VENUE))).status).toBe(200);
});
afterAll(() => server.close());

describe('a form pattern written to backtrack', () => {
  it('answers a value it does not match with a 400 at once, as any other mismatch (without the fix this test times out)', async () => {
    const form = { comment: { order: 1, value: { param: { type: 'string', regex: '(a|a)*c' } } } };
    expect((await root.post('/invitations', { id: INVITATION, domain: VENUE, form, invitees: ['~'] })).status).toBe(200);
    const res = await root.post('/notes', { invitation: INVITATION, content: { comment: { value: 'a'.repeat(60) } } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ name: 'ValidationError', details: { path: 'content/comment/value' } });
    expect((await root.post('/notes', { invitation: INVITATION, content: { comment: { value: 'aaac' } } })).status).toBe(200);
  });

  it('refuses a pattern that needs backtracking (a backreference, a lookahead) when the form is saved', async () => {
    for (const regex of ['(a)\\1', '(?=a)a', '(?<!b)a']) {
      const form = { comment: { order: 1, value: { param: { type: 'string', regex } } } };
      const res = await root.post('/invitations', { id: `${VENUE}/-/Other`, domain: VENUE, form });
      expect(res.status, regex).toBe(400);
      expect(res.body, regex).toMatchObject({ name: 'ValidationError', details: { path: 'form/comment/value/param/regex' } });
    }
  });
});
