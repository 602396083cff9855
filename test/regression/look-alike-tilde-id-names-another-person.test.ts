/**
 * Found by an independent attack review. A name typed with a combining accent (`José` as `e` +
 * U+0301) made a tilde id of its own, `~José_Garcia1` beside the composed `~José_Garcia1`: two
 * profiles whose ids look the same, while every lookup composes the id it is given (NFC) and so
 * found the first. A moderator blocking the look-alike blocked the real person. Ids are made
 * composed now, so the second person is `~José_Garcia2`.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

it('a decomposed name counts on from the composed one’s numbers', async () => {
  const composed = await createActiveUser(server, { fullname: 'Jos\u00e9 Garcia' });
  expect(composed.id).toBe('~Jos\u00e9_Garcia1');
  const guest = new Client(server.url);
  expect((await guest.get(`/tildeusername?fullname=${encodeURIComponent('Jose\u0301 Garcia')}`)).body.username).toBe('~Jos\u00e9_Garcia2');
  const signUp = await guest.post('/register', { token: 'dev-ok', email: 'lookalike@example.org', password: 'Look-Alike-Secret-9', fullname: 'Jose\u0301 Garcia' });
  expect(signUp.status).toBe(200);
  const ids = await server.service.db('profile_usernames').whereIn('profile_id', [composed.id, signUp.body.id ?? '']).pluck('username');
  expect(new Set(ids.map((id: string) => id.normalize('NFC'))).size).toBe(ids.length);
  const stored = await server.service.db('profiles').where({ id: signUp.body.id }).first('id');
  expect(stored?.id).toBe('~Jos\u00e9_Garcia2');
});
