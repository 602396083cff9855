/**
 * Found by an independent fuzz. `POST /oidc/logout` (RP-Initiated Logout 1.0 §2 allows POST) from
 * a signed-in browser with no form body, or a body of another type, answered 500: the page read
 * the parameters of a body that was never parsed. It is now asked as a GET without parameters.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cookieHeader } from '../helpers/cookies.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

it('asks the person signed in, whatever body came, and ends nothing yet', async () => {
  const person = await createActiveUser(server);
  const { client } = await loggedIn(server, person.email);
  const cookie = cookieHeader(client.jar);
  const bodies: Array<[string | undefined, string]> = [[undefined, ''], ['application/json', '{"state":"x"}'], ['text/plain', 'state=x'], ['multipart/form-data; boundary=b', '--b--\r\n']];
  for (const [type, body] of bodies) {
    const res = await fetch(`${server.url}/oidc/logout`, { method: 'POST', headers: { cookie, ...(type ? { 'content-type': type } : {}) }, body });
    expect(res.status, type).toBe(200);
    expect(res.headers.get('content-type'), type).toMatch(/^text\/html/);
  }
  expect((await client.get('/profiles')).status).toBe(200);
});
