/**
 * Found by an independent review of the accounts work. `POST /user/confirm` took any string as the
 * alternate address. The schema now refuses what is not an email, and the Error body names the
 * field (`details.path`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

describe('confirming an email', () => {
  it('an alternate that is not an email is refused by the schema, naming the field', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    const res = await client.post('/user/confirm', { alternate: 'not-an-email' });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual({ path: 'alternate', reqId: expect.any(String) });
  });
});
