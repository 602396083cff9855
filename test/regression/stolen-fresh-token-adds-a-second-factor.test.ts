/**
 * The failure (issue 24, defect 2): with only `Authorization: Bearer …` from a session opened in
 * the last ten minutes (a token copied from a fresh session), `POST /mfa/setup/totp/init` and
 * `/verify` succeeded and handed out the recovery codes; the owner's password reset leaves that
 * factor on, so the thief kept the account. Adding any factor, and regenerating recovery codes,
 * now needs the session's refresh cookie (the browser or client that signed in), as adding an
 * email already did, or a password typed now (`POST /mfa/reauthenticate`).
 */
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REFRESH_TOKEN_COOKIE } from '../../shared/index.ts';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

/** The owner signs in; the thief holds a copy of the fresh access token only. */
async function stolen(): Promise<{ owner: Client; thief: Client }> {
  const person = await createActiveUser(server);
  const owner = new Client(server.url);
  const res = await owner.post('/login', { id: person.email, password: PASSWORD });
  expect(res.status).toBe(200);
  const thief = new Client(server.url);
  thief.bearer = res.body.token;
  return { owner, thief };
}

const REFUSED = { status: 403, name: 'ForbiddenError', details: { reauthenticate: '/mfa/reauthenticate' } };

describe('a fresh access token alone', () => {
  it('cannot add an authenticator app, codes by email or a passkey, nor make new recovery codes', async () => {
    const { thief } = await stolen();
    expect((await thief.post('/mfa/setup/totp/init')).body).toMatchObject(REFUSED);
    expect((await thief.post('/mfa/setup/totp/verify', { code: '123456' })).body).toMatchObject(REFUSED);
    expect((await thief.post('/mfa/setup/email')).body).toMatchObject(REFUSED);
    expect((await thief.post('/mfa/setup/passkey/init')).body).toMatchObject(REFUSED);
    expect((await thief.post('/mfa/recovery-codes/regenerate')).body).toMatchObject(REFUSED);
    expect((await thief.get('/mfa/status')).body).toMatchObject({ enabled: false });
  });

  it('cannot read the authenticator secret the owner is setting up (the page shows it again after a wrong code)', async () => {
    const { owner, thief } = await stolen();
    const init = await owner.post('/mfa/setup/totp/init');
    expect(init.status).toBe(200);
    const read = await thief.get('/trpc/accounts.mfa.totpWaiting');
    expect(read.status).toBe(403);
    expect(JSON.stringify(read.body)).not.toContain(init.body.secret);
    // The owner's browser, with its refresh cookie, may.
    const own = await owner.get('/trpc/accounts.mfa.totpWaiting');
    expect(own.status).toBe(200);
    expect(own.body.result.data.secret).toBe(init.body.secret);
  });

  it('nor can a super user impersonating the owner', async () => {
    const person = await createActiveUser(server);
    const owner = new Client(server.url);
    expect((await owner.post('/login', { id: person.email, password: PASSWORD })).status).toBe(200);
    expect((await owner.post('/mfa/setup/totp/init')).status).toBe(200);
    const root = await createActiveUser(server, { role: 'superuser' });
    const admin = new Client(server.url);
    expect((await admin.post('/login', { id: root.email, password: PASSWORD })).status).toBe(200);
    const impersonation = await admin.post('/impersonate', { groupId: person.id });
    expect(impersonation.status).toBe(200);
    const impersonator = new Client(server.url);
    impersonator.bearer = impersonation.body.token;
    const read = await impersonator.get('/trpc/accounts.mfa.totpWaiting');
    expect(read.status).toBe(403);
    expect(JSON.stringify(read.body)).toContain('while impersonating');
  });

  it('can once the password is typed again, as the owner of a script would', async () => {
    const { thief } = await stolen();
    // Only someone who knows the password gets past this.
    expect((await thief.post('/mfa/reauthenticate', { password: 'Not-The-Password-1' })).status).toBe(400);
    expect((await thief.post('/mfa/reauthenticate', { password: PASSWORD })).status).toBe(200);
    const init = await thief.post('/mfa/setup/totp/init');
    expect(init.status).toBe(200);
    const code = TOTP.generate({ secret: Secret.fromBase32(init.body.secret) });
    const verified = await thief.post('/mfa/setup/totp/verify', { code });
    expect(verified.status).toBe(200);
    expect(verified.body.recoveryCodes).toHaveLength(10);
  });

  it('the browser that signed in adds a factor with its refresh cookie, without typing the password again', async () => {
    const { owner } = await stolen();
    expect(owner.jar.has(REFRESH_TOKEN_COOKIE)).toBe(true);
    const setup = await owner.post('/mfa/setup/email');
    expect(setup.status).toBe(200);
    expect(setup.body).toMatchObject({ emailOtpEnabled: true, recoveryCodes: expect.any(Array) });
    expect((await owner.post('/mfa/recovery-codes/regenerate')).status).toBe(200);
  });
});
