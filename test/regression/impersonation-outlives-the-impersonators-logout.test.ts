/**
 * Found by an independent review of the accounts work. An impersonation session outlived the
 * impersonator's session: after the impersonator logged out, or logged out of every device, the
 * impersonation token went on working. An impersonation ends with the session that started it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';
import { bearerClient } from './helpers.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

const bearer = (token: string) => bearerClient(server, token);

describe('impersonation sessions', () => {
  it('end when the impersonator logs out, or logs out of every device', async () => {
    const root = await createActiveUser(server, { role: 'superuser', fullname: 'Root Ender' });
    const target = await createActiveUser(server);

    const first = await loggedIn(server, root.email);
    const imp = bearer((await bearer(first.token).post('/impersonate', { groupId: target.id })).body.token);
    expect((await imp.get('/profiles')).status).toBe(200);
    await bearer(first.token).post('/logout');
    expect((await imp.get('/profiles')).status).toBe(401);
    expect((await imp.post('/refreshToken')).status).toBe(401);

    const second = await loggedIn(server, root.email);
    const again = bearer((await bearer(second.token).post('/impersonate', { groupId: target.id })).body.token);
    expect((await again.get('/profiles')).status).toBe(200);
    await bearer(second.token).post('/logout-all-devices');
    expect((await again.get('/profiles')).status).toBe(401);
  });
});
