/**
 * Found by an independent review of the accounts work. `POST /logout` with an access token that
 * had expired left the refresh cookie usable: the session lived on after the user had asked to
 * end it. Logout ends the session the refresh cookie names, whatever the state of the access token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../helpers/clock.ts';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';

let server: TestServer;
const clock = new TestClock();
beforeAll(async () => {
  server = await startServer({}, undefined, { now: clock.now });
});
afterAll(async () => {
  await server.close();
});

describe('logout', () => {
  it('with an expired access token still ends the session its refresh cookie names', async () => {
    const user = await createActiveUser(server);
    const client = new Client(server.url);
    await client.post('/login', { id: user.email, password: PASSWORD, expiresIn: 1 });
    const refresh = client.jar.get('service.refreshToken') ?? '';
    clock.advance(1100);
    expect((await client.post('/logout')).status).toBe(200);
    const replay = new Client(server.url);
    replay.jar.set('service.refreshToken', refresh);
    expect((await replay.post('/refreshToken')).status).toBe(401);
  });
});
