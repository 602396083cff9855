import { TRPCClientError } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../client/index.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

describe('the typed client', () => {
  it('logs in, asks who it is, refreshes and logs out with a bearer token', async () => {
    const user = await createActiveUser(server, { fullname: 'Katherine Johnson' });
    const client = createClient({ baseUrl: server.url });
    const session = await client.login({ id: user.email, password: PASSWORD });
    expect(session.user.profile.id).toBe(user.id);
    expect(client.token).toBe(session.token);

    const { profiles } = await client.api.accounts.profiles.query();
    expect(profiles.map((p) => p.id)).toEqual([user.id]);

    const refreshed = await client.refresh();
    expect(refreshed.token).not.toBe(session.token);
    await client.logout();
    expect(client.token).toBeUndefined();

    const stale = createClient({ baseUrl: server.url, token: refreshed.token });
    const error = await stale.api.accounts.profiles.query().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCClientError);
    expect((error as TRPCClientError<never>).data).toMatchObject({ httpStatus: 401, error: { name: 'UnauthorizedError' } });
  });
});
