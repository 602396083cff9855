/**
 * A response that breaks its own schema is the server's fault: it must be a generic 500 with
 * the cause in the log, never a 400 that blames the client's input.
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

describe('a stored profile that breaks the Profile schema', () => {
  it('is answered with a generic 500, and the details go to the log only', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    await server.service.db('profiles').where({ id: user.id }).update({ content: JSON.stringify({ pronouns: 'x'.repeat(60) }) });
    const res = await client.get('/profiles');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ status: 500, name: 'InternalServerError', message: 'Internal server error', details: { reqId: expect.any(String) } });
    const logged = server.logs.map((line) => JSON.parse(line)).find((line) => line.msg === 'unexpected error');
    expect(logged?.err?.message).toMatch(/Output validation failed/);
  });
});
