/**
 * Found by an attack review of issue 12: any signed-in user saw another profile's
 * `content.preferredEmail` and its relations' emails, and `GET /profiles?email=` or
 * `POST /profiles/search {emails}` told whether an address had an account, sign-ups not yet
 * activated included (which undid the care `/register` takes not to tell). Emails are shown
 * only to the profile's owner and to moderators; an address is looked up only once confirmed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, HISTORY, loggedIn, registerAndGetToken } from '../helpers/users.ts';

let server: TestServer;
let stranger: Client;
let personId: string;

beforeAll(async () => {
  server = await startServer();
  const { id, token } = await registerAndGetToken(server, { email: 'eve@example.org', fullname: 'Eve Example' });
  personId = id;
  const content = { history: HISTORY, preferredEmail: 'eve@example.org', relations: [{ relation: 'Coauthor', name: 'Carol Coauthor', email: 'carol@example.org' }] };
  expect((await new Client(server.url).request('PUT', `/activate/${token}`, { content })).status).toBe(200);
  await registerAndGetToken(server, { email: 'pending@example.org', fullname: 'Pending Person' });
  stranger = (await loggedIn(server, (await createActiveUser(server)).email)).client;
});
afterAll(() => server.close());

describe('another person’s profile', () => {
  it('shows no email: not the preferred one in its content, nor its relations’', async () => {
    const res = await stranger.get(`/profiles?id=${encodeURIComponent(personId)}`);
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.body)).not.toContain('@example.org');
    expect(res.body.profiles[0].content.relations).toEqual([{ relation: 'Coauthor', name: 'Carol Coauthor' }]);
  });

  it('is not found by an address waiting for its confirmation', async () => {
    expect((await stranger.get('/profiles?email=pending@example.org')).body).toEqual({ profiles: [] });
    expect((await stranger.post('/profiles/search', { emails: ['pending@example.org'] })).body).toEqual({ profiles: [] });
    expect((await stranger.get('/profiles?email=eve@example.org')).body.profiles.map((p: { id: string }) => p.id)).toEqual([personId]);
  });
});
