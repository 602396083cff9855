/**
 * Found in review of the account pages: a profile's homepage (and its other links) was any text,
 * so `javascript:alert(1)` was stored through activation and shown to everyone in
 * `GET /profiles`, a stored XSS for any frontend that links it. Links are web addresses now (no
 * scheme, or http/https), refused otherwise with a 400 naming the field; a migration removes
 * the ones stored before.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { up as removeUnsafeLinks } from '../../db/migrations/20261124060000_profile_links_are_web_addresses.ts';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, HISTORY, loggedIn, registerAndGetToken } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

it.each(['javascript:alert(1)', ' JavaScript:alert(1)', 'java\nscript:alert(1)', 'data:text/html,<script>alert(1)</script>', 'vbscript:msgbox(1)'])(
  'refuses %j as a homepage and activates nothing',
  async (homepage) => {
    const { id, token } = await registerAndGetToken(server, { email: `x${Math.random()}@example.org`, fullname: 'Eve Mallory' });
    const res = await new Client(server.url).request('PUT', `/activate/${token}`, { content: { history: HISTORY, homepage } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ name: 'ValidationError', message: expect.stringContaining('web address') });
    expect(await server.service.db('profiles').where({ id }).first()).toMatchObject({ state: 'Inactive' });
  },
);

it('keeps web addresses, with or without their scheme', async () => {
  const { id, token } = await registerAndGetToken(server, { email: 'links@example.org', fullname: 'Lin Ks' });
  const content = { history: HISTORY, homepage: 'https://example.org/~lin', dblp: 'http://dblp.org/pid/1', gscholar: 'scholar.google.com/citations?user=x' };
  const res = await new Client(server.url).request('PUT', `/activate/${token}`, { content });
  expect(res.status).toBe(200);
  const stored = JSON.parse((await server.service.db('profiles').where({ id }).first()).content);
  expect(stored).toMatchObject({ homepage: content.homepage, dblp: content.dblp, gscholar: content.gscholar });
});

it('removes unsafe links stored before, and keeps the rest of the profile', async () => {
  const user = await createActiveUser(server);
  const db = server.service.db;
  const before = JSON.parse((await db('profiles').where({ id: user.id }).first()).content);
  await db('profiles').where({ id: user.id }).update({ content: JSON.stringify({ ...before, homepage: 'javascript:alert(1)', dblp: 'https://dblp.org/x' }) });
  await removeUnsafeLinks(db);
  const after = JSON.parse((await db('profiles').where({ id: user.id }).first()).content);
  expect(after).toEqual({ ...before, dblp: 'https://dblp.org/x' });
  const { client } = await loggedIn(server, user.email);
  const profile = await client.request('GET', `/profiles?id=${encodeURIComponent(user.id)}`);
  expect(profile.status).toBe(200);
});
