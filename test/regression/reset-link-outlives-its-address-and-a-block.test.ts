/**
 * Found by an independent attack review. A reset link kept working after what should void it:
 * mailed to an address its person then removed (perhaps because someone else reads that mailbox
 * now), it reset their password and let that mailbox in; asked for before a moderator blocked or
 * deleted the profile, it set a new password on it. A reset link resets now only while its
 * address is still the profile's and the profile is one a reset may be mailed for.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { lastMailTo, readOutbox } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { confirmAddress, createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

const NEW_PASSWORD = 'Entirely-New-Secret-77';

async function askReset(email: string): Promise<string> {
  expect((await new Client(server.url).post('/resettable', { id: email, token: 'dev-ok' })).status).toBe(200);
  const token = /\/user\/password\?token=([\w-]+)/.exec((await lastMailTo(server.dataDir, email)).text)?.[1];
  if (!token) throw new Error('no reset link');
  return token;
}

async function expectVoid(token: string): Promise<void> {
  const guest = new Client(server.url);
  expect((await guest.get(`/resettable/${token}`)).status).toBe(400);
  const used = await guest.request('PUT', `/reset/${token}`, { password: NEW_PASSWORD });
  expect(used.status).toBe(400);
  expect(used.body.name).toBe('ValidationError');
}

describe('a reset link', () => {
  it('resets nothing once its address was removed', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    const old = `old-${user.email}`;
    await confirmAddress(server, client, old);
    const token = await askReset(old);
    expect((await client.post('/trpc/accounts.removeEmail', { email: old })).status).toBe(200);
    await expectVoid(token);
    expect((await new Client(server.url).post('/login', { id: user.email, password: NEW_PASSWORD })).status).toBe(400);
    // Nor does the old link's "send me a new one" mail the address removed.
    const mailed = (await readOutbox(server.dataDir)).filter((m) => m.to === old).length;
    expect((await new Client(server.url).post('/trpc/accounts.requestResetFromLink', { token })).status).toBe(200);
    // A mail asked for after it has gone out once the outbox has taken both, in order.
    await askReset(user.email);
    expect((await readOutbox(server.dataDir)).filter((m) => m.to === old)).toHaveLength(mailed);
  });

  it('resets nothing once the profile is blocked or deleted', async () => {
    const moderator = (await loggedIn(server, (await createActiveUser(server, { role: 'moderator' })).email)).client;
    for (const decision of ['block', 'delete'] as const) {
      const user = await createActiveUser(server);
      const token = await askReset(user.email);
      expect((await moderator.post('/profile/moderate', { id: user.id, decision })).status).toBe(200);
      await expectVoid(token);
    }
  });

  it('still resets while its address and profile stand', async () => {
    const user = await createActiveUser(server);
    const token = await askReset(user.email);
    expect((await new Client(server.url).request('PUT', `/reset/${token}`, { password: NEW_PASSWORD })).status).toBe(200);
    expect((await new Client(server.url).post('/login', { id: user.email, password: NEW_PASSWORD })).status).toBe(200);
  });
});
