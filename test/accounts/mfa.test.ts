/**
 * Multi-factor sign-in over HTTP, on a real server and database: the second step of `/login`,
 * TOTP (codes computed by `otpauth` at the server's own controlled clock), emailed codes (read
 * from the outbox), recovery codes, the lockout, remembered browsers, re-authentication, what is
 * stored, and the passkey routes while no passkey service is wired.
 */
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../helpers/clock.ts';
import { statementsSent } from '../helpers/database.ts';
import { Client } from '../helpers/http.ts';
import { lastMailTo, readOutbox } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';

let server: TestServer;
const clock = new TestClock();

beforeAll(async () => {
  server = await startServer({}, undefined, { now: clock.now });
});
afterAll(() => server.close());

function codeAt(secret: string, at: number): string {
  return TOTP.generate({ secret: Secret.fromBase32(secret), timestamp: at });
}

/** Sets TOTP up for a signed-in client; the secret and the recovery codes. */
async function enableTotp(client: Client): Promise<{ secret: string; recoveryCodes: string[] }> {
  const init = await client.post('/mfa/setup/totp/init');
  expect(init.status).toBe(200);
  const verified = await client.post('/mfa/setup/totp/verify', { code: codeAt(init.body.secret, clock.now()) });
  expect(verified.status).toBe(200);
  return { secret: init.body.secret, recoveryCodes: verified.body.recoveryCodes };
}

async function pendingLogin(client: Client, id: string): Promise<string> {
  const res = await client.post('/login', { id, password: PASSWORD });
  expect(res.status).toBe(200);
  expect(res.body.mfaPending).toBe(true);
  return res.body.mfaPendingToken;
}

/** Moves the clock to the start of the next 30-second step, so two codes in a test are of known steps. */
function nextStep(): void {
  clock.advance(30_000 - (clock.now() % 30_000) + 1_000);
}

describe('TOTP', () => {
  let user: { id: string; email: string };
  let secret: string;
  let recoveryCodes: string[];

  beforeAll(async () => {
    user = await createActiveUser(server);
  });

  it('set-up answers the secret, its otpauth:// URI and a QR code; a wrong code does not turn it on', async () => {
    const { client } = await loggedIn(server, user.email);
    const init = await client.post('/mfa/setup/totp/init');
    expect(init.status).toBe(200);
    expect(init.body.secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(init.body.qrCodeUrl).toMatch(/^otpauth:\/\/totp\/.+secret=/);
    expect(init.body.qrCodeUrl).toContain(`secret=${init.body.secret}`);
    expect(init.body.qrCodeDataUrl).toMatch(/^data:image\/png;base64,/);
    const wrong = await client.post('/mfa/setup/totp/verify', { code: '000000' === codeAt(init.body.secret, clock.now()) ? '111111' : '000000' });
    expect(wrong.status).toBe(400);
    expect(wrong.body).toMatchObject({ name: 'BadRequestError', message: 'Invalid verification code' });
    expect((await client.get('/mfa/status')).body).toMatchObject({ enabled: false, methods: [] });
  });

  it('a right code turns it on and, as the first factor, answers ten recovery codes', async () => {
    const { client } = await loggedIn(server, user.email);
    ({ secret, recoveryCodes } = await enableTotp(client));
    expect(recoveryCodes).toHaveLength(10);
    for (const code of recoveryCodes) expect(code).toMatch(/^[A-Z0-9]{4}-[A-Z0-9]{4}$/);
    expect(new Set(recoveryCodes).size).toBe(10);
    const status = await client.get('/mfa/status');
    expect(status.body).toEqual({ enabled: true, methods: ['totp'], preferredMethod: 'totp', recoveryCodesRemaining: 10, trustedDevicesCount: 0 });
  });

  it('the status reads the factors once: the methods and the preferred one come from the same row', async () => {
    const { client } = await loggedIn(server, (await createActiveUser(server)).email);
    await enableTotp(client);
    const sent = await statementsSent(server.service.db, async () => {
      expect((await client.get('/mfa/status')).body).toMatchObject({ enabled: true, methods: ['totp'], preferredMethod: 'totp', recoveryCodesRemaining: 10 });
    });
    expect(sent.filter((s) => /\bmfa_factors\b/.test(s.sql))).toHaveLength(1);
  });

  it('stores the secret encrypted and the recovery codes hashed', async () => {
    const db = server.service.services.db;
    const row = await db('mfa_factors').where({ profile_id: user.id }).first();
    expect(row.totp_secret).toMatch(/^v1\./);
    expect(row.totp_secret).not.toContain(secret);
    const stored = JSON.stringify(await db('mfa_recovery_codes').where({ profile_id: user.id }));
    for (const code of recoveryCodes) {
      expect(stored).not.toContain(code);
      expect(stored).not.toContain(code.replace('-', ''));
    }
  });

  it('/login answers mfaPending with the methods and no session or cookie', async () => {
    const client = new Client(server.url);
    const res = await client.post('/login', { id: user.email, password: PASSWORD });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ mfaPending: true, mfaPendingToken: expect.any(String), mfaMethods: ['totp'], preferredMethod: 'totp' });
    expect(res.headers.getSetCookie()).toEqual([]);
    expect(client.jar.size).toBe(0);
  });

  it('/mfa/verify with a code opens the session as /login does (body and cookies); the pending token is used up', async () => {
    nextStep();
    const client = new Client(server.url);
    const pending = await pendingLogin(client, user.email);
    const res = await client.post('/mfa/verify', { mfaPendingToken: pending, method: 'totp', code: codeAt(secret, clock.now()) });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ token: expect.any(String), user: { id: user.email, profile: { id: user.id } } });
    expect(Object.keys(res.cookies).sort()).toEqual(['service.accessToken', 'service.device', 'service.refreshToken', 'service.user']);
    const me = await client.get('/profiles');
    expect(me.status).toBe(200);
    const again = await new Client(server.url).post('/mfa/verify', { mfaPendingToken: pending, method: 'totp', code: codeAt(secret, clock.now()) });
    expect(again.status).toBe(400);
    expect(again.body.name).toBe('BadRequestError');
  });

  it('a code is used once; the next step’s code is taken, a code from two steps back is not', async () => {
    const client = new Client(server.url);
    const sameCode = await client.post('/mfa/verify', { mfaPendingToken: await pendingLogin(client, user.email), method: 'totp', code: codeAt(secret, clock.now()) });
    expect(sameCode.status).toBe(400);
    // One step ahead of the server (a phone's clock a little fast) is taken.
    const ahead = await client.post('/mfa/verify', { mfaPendingToken: await pendingLogin(client, user.email), method: 'totp', code: codeAt(secret, clock.now() + 30_000) });
    expect(ahead.status).toBe(200);
    nextStep();
    nextStep();
    nextStep();
    const old = await client.post('/mfa/verify', { mfaPendingToken: await pendingLogin(client, user.email), method: 'totp', code: codeAt(secret, clock.now() - 60_000) });
    expect(old.status).toBe(400);
    const late = await client.post('/mfa/verify', { mfaPendingToken: await pendingLogin(client, user.email), method: 'totp', code: codeAt(secret, clock.now() - 30_000) });
    expect(late.status).toBe(200);
  });

  it('a recovery code signs in once, in any letter case and with or without its hyphen', async () => {
    const code = recoveryCodes[0]!;
    const client = new Client(server.url);
    const res = await client.post('/mfa/verify', { mfaPendingToken: await pendingLogin(client, user.email), method: 'recovery', code: code.replace('-', '').toLowerCase() });
    expect(res.status).toBe(200);
    const again = await client.post('/mfa/verify', { mfaPendingToken: await pendingLogin(client, user.email), method: 'recovery', code });
    expect(again.status).toBe(400);
    const { client: me } = await loggedInWithTotp(user.email, secret);
    expect((await me.get('/mfa/status')).body.recoveryCodesRemaining).toBe(9);
  });

  it('five wrong codes lock the account for 15 minutes, saying until when; a right code then waits too', async () => {
    const client = new Client(server.url);
    const pending = await pendingLogin(client, user.email);
    for (let i = 1; i <= 4; i += 1) {
      const res = await client.post('/mfa/verify', { mfaPendingToken: pending, method: 'totp', code: '12345' + String(i) });
      expect(res.status).toBe(400);
      expect(res.body.message).toBe('Invalid verification code');
    }
    const fifth = await client.post('/mfa/verify', { mfaPendingToken: pending, method: 'totp', code: '123450' });
    expect(fifth.status).toBe(429);
    expect(fifth.body.name).toBe('TooManyError');
    expect(fifth.body.message).toContain('Account temporarily locked due to too many failed MFA attempts');
    const until = Date.parse(fifth.body.details.lockedUntil);
    expect(until).toBeGreaterThan(clock.now() + 14 * 60_000);
    expect(until).toBeLessThanOrEqual(clock.now() + 15 * 60_000);
    expect(fifth.body.message).toContain(fifth.body.details.lockedUntil);
    nextStep();
    const right = await client.post('/mfa/verify', { mfaPendingToken: pending, method: 'totp', code: codeAt(secret, clock.now()) });
    expect(right.status).toBe(429);
    clock.set(until + 1_000);
    nextStep();
    const after = await client.post('/mfa/verify', { mfaPendingToken: await pendingLogin(client, user.email), method: 'totp', code: codeAt(secret, clock.now()) });
    expect(after.status).toBe(200);
  });

  it('rememberDevice gives the browser a 30-day cookie (hashed in the database) that skips the second factor there only', async () => {
    nextStep();
    const browser = new Client(server.url);
    const res = await browser.post('/mfa/verify', { mfaPendingToken: await pendingLogin(browser, user.email), method: 'totp', code: codeAt(secret, clock.now()), rememberDevice: true });
    expect(res.status).toBe(200);
    const cookie = res.cookies['service.mfaTrustedDevice'];
    expect(cookie?.attributes).toMatch(/Max-Age=2592000/);
    expect(cookie?.attributes).toMatch(/HttpOnly/);
    const rows = JSON.stringify(await server.service.services.db('mfa_trusted_devices').where({ profile_id: user.id }));
    expect(rows).not.toContain(cookie!.value);
    await browser.post('/logout');
    const again = await browser.post('/login', { id: user.email, password: PASSWORD });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ token: expect.any(String) });
    expect((await browser.get('/mfa/status')).body.trustedDevicesCount).toBe(1);
    const other = await new Client(server.url).post('/login', { id: user.email, password: PASSWORD });
    expect(other.body.mfaPending).toBe(true);
    // Another person signing in on that browser still needs their own second factor.
    const stranger = await createActiveUser(server);
    const strangerClient = await loggedIn(server, stranger.email);
    await enableTotp(strangerClient.client);
    const onSameBrowser = await browser.post('/login', { id: stranger.email, password: PASSWORD });
    expect(onSameBrowser.body.mfaPending).toBe(true);
    // After 30 days the browser asks again.
    clock.advance(31 * 24 * 60 * 60 * 1000);
    const later = await browser.post('/login', { id: user.email, password: PASSWORD });
    expect(later.body.mfaPending).toBe(true);
  });

  it('DELETE /mfa/trusted-devices forgets every remembered browser', async () => {
    nextStep();
    const browser = new Client(server.url);
    await browser.post('/mfa/verify', { mfaPendingToken: await pendingLogin(browser, user.email), method: 'totp', code: codeAt(secret, clock.now()), rememberDevice: true });
    expect((await browser.get('/mfa/status')).body.trustedDevicesCount).toBe(1);
    const forgotten = await browser.request('DELETE', '/mfa/trusted-devices');
    expect(forgotten.status).toBe(200);
    expect(forgotten.body.trustedDevicesCount).toBe(0);
    expect((await browser.post('/login', { id: user.email, password: PASSWORD })).body.mfaPending).toBe(true);
  });

  it('a logout of every device (and so a password reset) forgets the remembered browsers', async () => {
    nextStep();
    const browser = new Client(server.url);
    const verified = await browser.post('/mfa/verify', { mfaPendingToken: await pendingLogin(browser, user.email), method: 'totp', code: codeAt(secret, clock.now()), rememberDevice: true });
    expect(verified.status).toBe(200);
    expect((await browser.post('/login', { id: user.email, password: PASSWORD })).body).toMatchObject({ token: expect.any(String) });
    expect((await browser.post('/logout-all-devices')).status).toBe(200);
    const after = await browser.post('/login', { id: user.email, password: PASSWORD });
    expect(after.body.mfaPending).toBe(true);
    nextStep();
    const back = await browser.post('/mfa/verify', { mfaPendingToken: after.body.mfaPendingToken, method: 'totp', code: codeAt(secret, clock.now()) });
    expect((await back).status).toBe(200);
    expect((await browser.get('/mfa/status')).body.trustedDevicesCount).toBe(0);
  });

  it('turning TOTP off needs a recent proof when the session is older than ten minutes', async () => {
    const { client } = await loggedInWithTotp(user.email, secret);
    clock.advance(11 * 60 * 1000);
    const stale = await client.request('DELETE', '/mfa/totp');
    expect(stale.status).toBe(403);
    expect(stale.body).toMatchObject({ name: 'ForbiddenError', details: { reauthenticate: '/mfa/reauthenticate' } });
    // Replacing the authenticator app and new recovery codes need the same proof.
    expect((await client.post('/mfa/setup/totp/init')).status).toBe(403);
    expect((await client.post('/mfa/recovery-codes/regenerate')).status).toBe(403);
    // A fresh code proves it too.
    nextStep();
    const byCode = await client.post('/mfa/reauthenticate', { method: 'totp', code: codeAt(secret, clock.now()) });
    expect(byCode.status).toBe(200);
    const regenerated = await client.post('/mfa/recovery-codes/regenerate');
    expect(regenerated.status).toBe(200);
    expect(regenerated.body.recoveryCodes).toHaveLength(10);
    expect((await client.get('/mfa/status')).body.recoveryCodesRemaining).toBe(10);
    clock.advance(11 * 60 * 1000);
    expect((await client.request('DELETE', '/mfa/totp')).status).toBe(403);
    const wrong = await client.post('/mfa/reauthenticate', { password: 'not-it' });
    expect(wrong.status).toBe(400);
    const right = await client.post('/mfa/reauthenticate', { password: PASSWORD });
    expect(right.status).toBe(200);
    expect(right.body.reauthenticatedUntil).toBeGreaterThan(clock.now());
    const off = await client.request('DELETE', '/mfa/totp');
    expect(off.status).toBe(200);
    expect(off.body).toEqual({ status: 'ok', enabled: false });
    expect((await client.get('/mfa/status')).body).toEqual({ enabled: false, methods: [], preferredMethod: null, recoveryCodesRemaining: 0, trustedDevicesCount: 0 });
    const plain = await new Client(server.url).post('/login', { id: user.email, password: PASSWORD });
    expect(plain.body).toMatchObject({ token: expect.any(String) });
  });

  it('every factor change is mailed to the person and written to the audit log', async () => {
    const mails = (await readOutbox(server.dataDir)).filter((m) => m.to === user.email && m.subject === 'Your sign-in settings changed');
    expect(mails.map((m) => m.text.split(' (')[0])).toEqual([
      'An authenticator app was set up for signing in',
      'A recovery code was used to sign in',
      'New recovery codes were made; the old ones no longer work',
      'The authenticator app was removed from signing in. Multi-factor sign-in is now off for your account',
    ]);
    // Every factor change is audited (sign-ins and wrong codes are too, for the activity log; they are not what this checks).
    const audit = await server.service.services.db('audit_log').where({ target: user.id }).whereLike('action', 'mfa.%').whereNot({ action: 'mfa.code.wrong' }).orderBy('id').pluck('action');
    expect(audit).toEqual(['mfa.totp.enabled', 'mfa.recovery.used', 'mfa.locked', 'mfa.trusted-devices.forgotten', 'mfa.recovery.regenerated', 'mfa.totp.disabled']);
  });
});

/** Signs in with the password and a TOTP code at the next step. */
async function loggedInWithTotp(id: string, secret: string): Promise<{ client: Client }> {
  nextStep();
  const client = new Client(server.url);
  const res = await client.post('/mfa/verify', { mfaPendingToken: await pendingLogin(client, id), method: 'totp', code: codeAt(secret, clock.now()) });
  if (res.status !== 200) throw new Error(`second step failed: ${JSON.stringify(res.body)}`);
  return { client };
}

describe('codes by email', () => {
  let user: { id: string; email: string };

  beforeAll(async () => {
    user = await createActiveUser(server);
  });

  async function mailedCode(): Promise<string> {
    const mail = await lastMailTo(server.dataDir, user.email);
    expect(mail.subject).toContain('Verification Code');
    const code = /verification code is: \*\*(\d{6})\*\*/.exec(mail.text)?.[1];
    if (!code) throw new Error(`no code in ${mail.text}`);
    return code;
  }

  it('set-up answers emailOtpEnabled and recovery codes; login then offers emailOtp', async () => {
    const { client } = await loggedIn(server, user.email);
    const res = await client.post('/mfa/setup/email');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ emailOtpEnabled: true, recoveryCodes: expect.any(Array) });
    const login = await new Client(server.url).post('/login', { id: user.email, password: PASSWORD });
    expect(login.body).toMatchObject({ mfaPending: true, mfaMethods: ['emailOtp'], preferredMethod: 'emailOtp' });
  });

  it('a challenge mails a 6-digit code (stored hashed); a newer one voids the older', async () => {
    const client = new Client(server.url);
    const pending = await pendingLogin(client, user.email);
    const first = await client.post('/mfa/challenge', { mfaPendingToken: pending, method: 'emailOtp' });
    expect(first.status).toBe(200);
    const firstCode = await mailedCode();
    const row = await server.service.services.db('mfa_email_codes').where({ profile_id: user.id }).first();
    expect(JSON.stringify(row)).not.toContain(firstCode);
    await client.post('/mfa/challenge', { mfaPendingToken: pending, method: 'emailOtp' });
    const secondCode = await mailedCode();
    if (firstCode !== secondCode) {
      const old = await client.post('/mfa/verify', { mfaPendingToken: pending, method: 'emailOtp', code: firstCode });
      expect(old.status).toBe(400);
    }
    const res = await client.post('/mfa/verify', { mfaPendingToken: pending, method: 'emailOtp', code: secondCode });
    expect(res.status).toBe(200);
    expect(res.body.user.profile.id).toBe(user.id);
    const reused = await client.post('/mfa/verify', { mfaPendingToken: await pendingLogin(client, user.email), method: 'emailOtp', code: secondCode });
    expect(reused.status).toBe(400);
  });

  it('a code is valid for ten minutes', async () => {
    const client = new Client(server.url);
    const pending = await pendingLogin(client, user.email);
    await client.post('/mfa/challenge', { mfaPendingToken: pending, method: 'emailOtp' });
    const code = await mailedCode();
    clock.advance(10 * 60 * 1000 + 1_000);
    const res = await client.post('/mfa/verify', { mfaPendingToken: pending, method: 'emailOtp', code });
    expect(res.status).toBe(400);
  });

  it('a method the person does not have is a 400, and so are malformed bodies', async () => {
    const client = new Client(server.url);
    const pending = await pendingLogin(client, user.email);
    const totp = await client.post('/mfa/verify', { mfaPendingToken: pending, method: 'totp', code: '123456' });
    expect(totp.status).toBe(400);
    expect(totp.body.message).toBe('The method totp is not set up for this account');
    const passkey = await client.post('/mfa/challenge', { mfaPendingToken: pending, method: 'passkey' });
    expect(passkey.status).toBe(400);
    for (const body of [{}, { mfaPendingToken: pending }, { mfaPendingToken: pending, method: 'sms', code: '1' }, { mfaPendingToken: pending, method: 'passkey', code: '123456' }]) {
      const res = await client.post('/mfa/verify', body);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ status: 400, name: expect.any(String), message: expect.any(String) });
    }
    const unknown = await client.post('/mfa/verify', { mfaPendingToken: 'made-up', method: 'emailOtp', code: '123456' });
    expect(unknown.status).toBe(400);
  });

  it('re-authentication with an emailed code: the challenge mails it, the code proves the person for ten minutes', async () => {
    const client = new Client(server.url);
    const pending = await pendingLogin(client, user.email);
    await client.post('/mfa/challenge', { mfaPendingToken: pending, method: 'emailOtp' });
    expect((await client.post('/mfa/verify', { mfaPendingToken: pending, method: 'emailOtp', code: await mailedCode() })).status).toBe(200);
    clock.advance(11 * 60 * 1000);
    expect((await client.request('DELETE', '/mfa/email')).status).toBe(403);
    const challenge = await client.post('/mfa/reauthenticate/challenge');
    expect(challenge.body).toEqual({ method: 'emailOtp', sent: true, expiresIn: 600 });
    const mail = await lastMailTo(server.dataDir, user.email);
    expect(mail.text).toContain('confirm a change to how you sign in');
    const proved = await client.post('/mfa/reauthenticate', { method: 'emailOtp', code: await mailedCode() });
    expect(proved.status).toBe(200);
    // Turning email codes off now would end MFA for this person; set TOTP up first so it stays on.
    const init = await client.post('/mfa/setup/totp/init');
    expect((await client.post('/mfa/setup/totp/verify', { code: codeAt(init.body.secret, clock.now()) })).body).toEqual({ totpEnabled: true });
    const off = await client.request('DELETE', '/mfa/email');
    expect(off.body).toEqual({ status: 'ok', enabled: true });
    expect((await client.get('/mfa/status')).body).toMatchObject({ enabled: true, methods: ['totp'], preferredMethod: 'totp' });
  });

  it('a password reset does not turn multi-factor sign-in off, and voids a sign-in waiting for its second step', async () => {
    const waiting = await pendingLogin(new Client(server.url), user.email);
    await new Client(server.url).post('/resettable', { id: user.email, token: 'dev-ok' });
    const mail = await lastMailTo(server.dataDir, user.email);
    const token = /\/user\/password\?token=([\w-]+)/.exec(mail.text)?.[1];
    const reset = await new Client(server.url).request('PUT', `/reset/${token}`, { password: 'Another-Pass-42' });
    expect(reset.status).toBe(200);
    const login = await new Client(server.url).post('/login', { id: user.email, password: 'Another-Pass-42' });
    expect(login.body).toMatchObject({ mfaPending: true, mfaMethods: ['totp'] });
    const voided = await new Client(server.url).post('/mfa/verify', { mfaPendingToken: waiting, method: 'recovery', code: 'AAAA-AAAA' });
    expect(voided.status).toBe(400);
    expect(voided.body.message).toBe('The sign-in has expired or was already completed. Please log in again.');
  });
});

describe('passkeys without a browser', () => {
  it('list is empty, setup answers creation options for the service, and an unknown passkey is a 404', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    expect((await client.get('/mfa/passkeys')).body).toEqual({ passkeys: [] });
    const init = await client.post('/mfa/setup/passkey/init');
    expect(init.status).toBe(200);
    expect(init.body).toMatchObject({ challenge: expect.any(String), rp: { id: new URL(server.url).hostname }, user: { name: user.email } });
    const del = await client.request('DELETE', '/mfa/passkeys/abc');
    expect(del.status).toBe(404);
  });
});

describe('the sweep', () => {
  it('forgets pending sign-ins and the per-session records of sessions that ended more than a day ago, and keeps the rest', async () => {
    const db = server.service.services.db;
    const user = await createActiveUser(server);
    await loggedIn(server, user.email);
    const { client: ended } = await loggedIn(server, user.email);
    const keptSession = (await db('sessions').where({ profile_id: user.id }).orderBy('created_at').first('id')).id;
    await ended.post('/logout');
    expect(await db('mfa_sign_ins').where({ profile_id: user.id })).toHaveLength(2);
    const { client: withTotp } = await loggedIn(server, user.email);
    await enableTotp(withTotp);
    await pendingLogin(new Client(server.url), user.email);
    expect(await db('mfa_pending').where({ profile_id: user.id })).toHaveLength(1);

    await server.service.services.mfa.sweep();
    expect(await db('mfa_sign_ins').where({ profile_id: user.id })).toHaveLength(3);
    clock.advance(25 * 60 * 60 * 1000);
    await server.service.services.mfa.sweep();
    expect(await db('mfa_pending').where({ profile_id: user.id })).toHaveLength(0);
    const left = await db('mfa_sign_ins').where({ profile_id: user.id }).pluck('session_id');
    expect(left).toContain(keptSession);
    expect(left).toHaveLength(2);
  });
});
