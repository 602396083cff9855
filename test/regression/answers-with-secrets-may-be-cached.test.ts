/**
 * Found in review of multi-factor sign-in: answers carrying secrets (the session token of
 * `POST /login`, a new TOTP secret, recovery codes) had no `Cache-Control`, so a shared cache
 * along the way could keep them. Every procedure answer, REST or tRPC, is now `no-store`.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';
import { Client } from '../helpers/http.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

it('marks REST and tRPC answers no-store', async () => {
  const user = await createActiveUser(server);
  const login = await new Client(server.url).post('/login', { id: user.email, password: PASSWORD });
  expect(login.status).toBe(200);
  expect(login.headers.get('cache-control')).toBe('no-store');

  const { client } = await loggedIn(server, user.email);
  const init = await client.post('/mfa/setup/totp/init');
  expect(init.status).toBe(200);
  expect(init.headers.get('cache-control')).toBe('no-store');

  const trpc = await client.request('GET', '/trpc/accounts.tildeUsername?input=' + encodeURIComponent(JSON.stringify({ fullname: 'Ada Lovelace' })));
  expect(trpc.status).toBe(200);
  expect(trpc.headers.get('cache-control')).toBe('no-store');
});
