/**
 * Found by an independent review of the accounts work. A one-time token sent as tRPC input (a
 * query's `?input=`) reached the request log. The log never holds a token, whichever way it came.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { registerAndGetToken } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

describe('logs', () => {
  it('never hold a token sent as tRPC input', async () => {
    const { token } = await registerAndGetToken(server, { email: 'trpc-log@example.org', fullname: 'Trpc Log' });
    const input = encodeURIComponent(JSON.stringify({ token }));
    expect((await new Client(server.url).get(`/trpc/accounts.activatable?input=${input}`)).status).toBe(200);
    expect(server.logs.join('\n')).not.toContain(token);
  });
});
