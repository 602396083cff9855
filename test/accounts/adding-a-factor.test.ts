/**
 * Adding a second factor needs the person, not only a token, through `accounts.mfa.*` called
 * without HTTP: the refresh cookie of a sign-in made within ten minutes (`credentials.refreshToken`),
 * or a password typed again within ten minutes (`accounts.mfa.reauthenticate`). An access token
 * alone is never enough. (regression/stolen-fresh-token-adds-a-second-factor.test.ts is the
 * same over HTTP.)
 */
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REAUTH_SECONDS } from '../../server/accounts/mfa/service.ts';
import type { Credentials, SessionCookies } from '../../server/context.ts';
import { startServices, type TestServices } from '../helpers/caller.ts';
import { TestClock } from '../helpers/clock.ts';
import { activePerson, PASSWORD } from '../helpers/users.ts';

const clock = new TestClock();
let t: TestServices;
beforeAll(async () => {
  t = await startServices({}, { now: clock.now });
});
afterAll(() => t.close());

const person = () => activePerson(t.services);

/** A password sign-in (of a new person, or of `email`): its access token and the refresh cookie it set. */
async function signedIn(email?: string): Promise<{ email: string; accessToken: string; refreshToken: string }> {
  email ??= await person();
  let refreshToken = '';
  const keep: SessionCookies = {
    set(session) {
      refreshToken = session.refreshToken;
    },
    clear() {},
  };
  const result = await t.caller({}, keep).accounts.login({ id: email, password: PASSWORD });
  if (!('token' in result) || !refreshToken) throw new Error('the sign-in set no session');
  return { email, accessToken: result.token, refreshToken };
}

const REFUSED = { cause: { name: 'ForbiddenError', status: 403, details: { reauthenticate: '/mfa/reauthenticate' } } };
const mfa = (credentials: Credentials) => t.caller(credentials).accounts.mfa;

describe('adding a second factor', () => {
  it('is refused to an access token alone, however fresh: no app, codes by email, passkey or new recovery codes', async () => {
    const { accessToken } = await signedIn();
    const alone = mfa({ accessToken });
    await expect(alone.totpInit()).rejects.toMatchObject(REFUSED);
    await expect(alone.totpVerify({ code: '123456' })).rejects.toMatchObject(REFUSED);
    await expect(alone.emailSetup()).rejects.toMatchObject(REFUSED);
    await expect(alone.passkeyInit()).rejects.toMatchObject(REFUSED);
    await expect(alone.regenerateRecoveryCodes()).rejects.toMatchObject(REFUSED);
    expect(await alone.status()).toMatchObject({ enabled: false });
  });

  it('is allowed with the refresh cookie of a sign-in made within ten minutes, and turns the app on with its code', async () => {
    const session = await signedIn();
    const init = await mfa(session).totpInit();
    expect(init).toEqual({ secret: expect.any(String), qrCodeUrl: expect.stringMatching(/^otpauth:\/\/totp\//), qrCodeDataUrl: expect.stringMatching(/^data:image\/png;base64,/) });
    const code = TOTP.generate({ secret: Secret.fromBase32(init.secret), timestamp: clock.now() });
    const verified = await mfa(session).totpVerify({ code });
    expect(verified).toEqual({ totpEnabled: true, recoveryCodes: expect.any(Array) });
    expect(verified.recoveryCodes).toHaveLength(10);
  });

  it('is refused with the refresh cookie once the sign-in is more than ten minutes old', async () => {
    const session = await signedIn();
    clock.advance(REAUTH_SECONDS * 1000 + 1000);
    await expect(mfa(session).totpInit()).rejects.toMatchObject(REFUSED);
  });

  it('takes no other session’s refresh cookie for this one’s', async () => {
    const first = await signedIn();
    const second = await signedIn(first.email);
    await expect(mfa({ accessToken: first.accessToken, refreshToken: second.refreshToken }).totpInit()).rejects.toMatchObject(REFUSED);
  });

  it('is allowed for ten minutes after the password is typed again, without the refresh cookie', async () => {
    const { accessToken } = await signedIn();
    await expect(mfa({ accessToken }).reauthenticate({ password: 'Not-The-Password-1' })).rejects.toMatchObject({ cause: { name: 'BadRequestError', status: 400, details: { path: 'password' } } });
    await expect(mfa({ accessToken }).totpInit()).rejects.toMatchObject(REFUSED);
    const proved = await mfa({ accessToken }).reauthenticate({ password: PASSWORD });
    expect(proved.reauthenticatedUntil).toBeGreaterThan(clock.now());
    expect(await mfa({ accessToken }).totpInit()).toMatchObject({ secret: expect.any(String) });
    clock.advance(REAUTH_SECONDS * 1000 + 1000);
    await expect(mfa({ accessToken }).totpInit()).rejects.toMatchObject(REFUSED);
  });
});
