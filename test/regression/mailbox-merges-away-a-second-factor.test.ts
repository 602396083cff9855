/**
 * Found in review of multi-factor sign-in: confirming another profile's address merges that
 * profile into the asker's on a code mailed to the address. Whoever read the mailbox of a person
 * with TOTP on could so take their names, emails and groups, and then sign in with their address
 * and no second factor. A profile with a second factor is no longer merged by a mailed code,
 * whether the factor was on when the code was asked for or turned on after it was mailed.
 */
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { lastMailTo } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

async function turnTotpOn(client: Client): Promise<void> {
  const init = await client.post('/mfa/setup/totp/init');
  expect(init.status).toBe(200);
  const code = TOTP.generate({ secret: Secret.fromBase32(init.body.secret), timestamp: Date.now() });
  expect((await client.post('/mfa/setup/totp/verify', { code })).status).toBe(200);
}

async function expectNotMerged(victim: { id: string; email: string }): Promise<void> {
  expect(await server.service.db('profiles').where({ id: victim.id }).first()).toMatchObject({ state: 'Active', merged_into: null });
  // Their address still asks for their second factor.
  const login = await new Client(server.url).post('/login', { id: victim.email, password: PASSWORD });
  expect(login.status).toBe(200);
  expect(login.body.mfaPending).toBe(true);
  expect(login.headers.getSetCookie()).toEqual([]);
}

it('refuses to mail a merge code for a profile with a second factor', async () => {
  const victim = await createActiveUser(server, { fullname: 'Ann Lee' });
  await turnTotpOn((await loggedIn(server, victim.email)).client);
  const attacker = await loggedIn(server, (await createActiveUser(server, { fullname: 'Ann Leigh' })).email);

  const asked = await attacker.client.post('/user/confirm', { alternate: victim.email });
  expect(asked.status).toBe(403);
  expect(asked.body).toMatchObject({ name: 'ForbiddenError', message: expect.stringContaining('two-step verification') });
  await expect(lastMailTo(server.dataDir, victim.email).then((m) => m.subject)).resolves.not.toBe('Duplicate Profile Found');
  await expectNotMerged(victim);
});

it('refuses a merge code mailed before the factor was turned on', async () => {
  const victim = await createActiveUser(server, { fullname: 'Bo Chen' });
  const attacker = await loggedIn(server, (await createActiveUser(server, { fullname: 'Bo Chan' })).email);
  expect((await attacker.client.post('/user/confirm', { alternate: victim.email })).status).toBe(200);
  const mail = await lastMailTo(server.dataDir, victim.email);
  expect(mail.subject).toBe('Duplicate Profile Found');
  const code = /code: (\d{6})/.exec(mail.text)?.[1];

  await turnTotpOn((await loggedIn(server, victim.email)).client);
  const confirmed = await attacker.client.request('PUT', '/activatelink', { email: victim.email, token: code });
  expect(confirmed.status).toBe(403);
  expect(confirmed.body.name).toBe('ForbiddenError');
  await expectNotMerged(victim);
});
