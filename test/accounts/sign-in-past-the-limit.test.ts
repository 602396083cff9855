/**
 * A sign-in past the account's limit, through `accounts.login` called without HTTP: a caller
 * without the account's device cookie is asked for human verification (`token`), one carrying
 * it (`credentials.device`, as the transport reads `service.device`) keeps its own allowance.
 * (regression/guest-locks-a-person-out.test.ts walks the same over HTTP.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withDeviceEntry } from '../../server/accounts/device-cookies.ts';
import type { SessionCookies } from '../../server/context.ts';
import type { SessionResult } from '../../shared/index.ts';
import { startServices, type TestServices } from '../helpers/caller.ts';
import { activePerson, PASSWORD } from '../helpers/users.ts';

let t: TestServices;
beforeAll(async () => {
  t = await startServices();
});
afterAll(() => t.close());

const person = () => activePerson(t.services);

/** Signs in once and answers the device cookie the sign-in leaves, as the transport would set it. */
async function deviceCookieOf(email: string): Promise<string> {
  let device: string | undefined;
  const keep: SessionCookies = {
    set(session) {
      if (session.deviceEntry) device = withDeviceEntry(device, session.deviceEntry);
    },
    clear() {},
  };
  await t.caller({}, keep).accounts.login({ id: email, password: PASSWORD });
  if (!device) throw new Error('the sign-in left no device cookie');
  return device;
}

/** Ten wrong passwords for `email`, each refused as wrong, from a caller carrying `device` (or none). */
async function exhaust(email: string, device?: string): Promise<void> {
  for (let i = 0; i < 10; i += 1) {
    await expect(t.caller({ device }).accounts.login({ id: email, password: `Wrong-Password-${i}` })).rejects.toMatchObject({ cause: { name: 'BadRequestError', status: 400 } });
  }
}

const login = (email: string, extra: { password?: string; token?: string; device?: string } = {}) =>
  t.caller({ device: extra.device }).accounts.login({ id: email, password: extra.password ?? PASSWORD, ...(extra.token ? { token: extra.token } : {}) });

describe('accounts.login past the account’s limit', () => {
  it('asks a caller without the account’s device cookie for human verification, and lets a verified attempt in', async () => {
    const email = await person();
    await exhaust(email);
    await expect(login(email)).rejects.toMatchObject({ cause: { name: 'TooManyError', status: 429, details: { humanVerification: 'required', retryAfter: expect.any(Number) } } });
    await expect(login(email, { token: 'not-a-token' })).rejects.toMatchObject({ cause: { name: 'HumanVerificationRequiredError', details: { path: 'token' } } });
    // A verified attempt with a wrong password is still wrong.
    await expect(login(email, { password: 'Wrong-Again-1', token: 'dev-ok' })).rejects.toMatchObject({ cause: { name: 'BadRequestError', status: 400 } });
    const verified = (await login(email, { token: 'dev-ok' })) as SessionResult;
    expect(verified).toMatchObject({ token: expect.any(String), user: { id: email } });
  });

  it('lets a caller carrying the account’s device cookie in without verification', async () => {
    const email = await person();
    const device = await deviceCookieOf(email);
    await exhaust(email);
    await expect(login(email)).rejects.toMatchObject({ cause: { name: 'TooManyError', details: { humanVerification: 'required' } } });
    expect(await login(email, { device })).toMatchObject({ token: expect.any(String), user: { id: email } });
  });

  it('counts a device cookie’s own failures against its own allowance: past it, the account’s, as any browser', async () => {
    const email = await person();
    const device = await deviceCookieOf(email);
    await exhaust(email, device);
    // Its failures were its own: the account's allowance is untouched, and the browser now shares it.
    expect(await login(email, { device })).toMatchObject({ token: expect.any(String) });
    expect(await login(email)).toMatchObject({ token: expect.any(String) });
  });

  it('takes one account’s device cookie for nothing on another account', async () => {
    const mine = await person();
    const other = await person();
    const device = await deviceCookieOf(mine);
    await exhaust(other);
    await expect(login(other, { device })).rejects.toMatchObject({ cause: { name: 'TooManyError', details: { humanVerification: 'required' } } });
  });
});
