/**
 * The rules of passkey ceremonies that need no authenticator: challenges expire and are used
 * once, a ceremony is for the person it was made for, and the sweeper forgets expired ones.
 * (What an authenticator answers is tested in Chromium: `passkeys.test.ts`.)
 */
import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CEREMONY_MS, PASSKEY_ERRORS } from '../../server/accounts/passkeys/ceremonies.ts';
import { startServices, type TestServices } from '../helpers/caller.ts';
import { TestClock } from '../helpers/clock.ts';

const clock = new TestClock();
let t: TestServices;

beforeAll(async () => {
  t = await startServices({}, { now: clock.now });
});
afterAll(() => t.close());

/** An answer that is never checked: every case here is refused before its signature is read. */
const ANSWER: AuthenticationResponseJSON = {
  id: 'AAAA',
  rawId: 'AAAA',
  type: 'public-key',
  response: { clientDataJSON: 'e30', authenticatorData: 'AAAA', signature: 'AAAA' },
  clientExtensionResults: {},
};

describe('passkey ceremonies', () => {
  it('refuses an answer after its challenge expired (five minutes)', async () => {
    const passkeys = t.services.passkeys;
    await passkeys.authenticationOptions({ userId: null, challengeKey: 'expiring' });
    clock.advance(CEREMONY_MS + 1);
    await expect(passkeys.authenticate(ANSWER, { userId: null, challengeKey: 'expiring' })).rejects.toMatchObject({ name: 'ValidationError', message: PASSKEY_ERRORS.noChallenge });
  });

  it('uses a challenge up on the first answer, even a wrong one', async () => {
    const passkeys = t.services.passkeys;
    await passkeys.authenticationOptions({ userId: null, challengeKey: 'once' });
    await expect(passkeys.authenticate(ANSWER, { userId: null, challengeKey: 'once' })).rejects.toMatchObject({ message: PASSKEY_ERRORS.notRegistered });
    await expect(passkeys.authenticate(ANSWER, { userId: null, challengeKey: 'once' })).rejects.toMatchObject({ message: PASSKEY_ERRORS.noChallenge });
  });

  it('does not take a passwordless ceremony for a person’s second step, nor a registration for a sign-in', async () => {
    const passkeys = t.services.passkeys;
    await passkeys.authenticationOptions({ userId: null, challengeKey: 'anyone' });
    await expect(passkeys.authenticate(ANSWER, { userId: '~Someone1', challengeKey: 'anyone' })).rejects.toMatchObject({ message: PASSKEY_ERRORS.noChallenge });
    await expect(passkeys.authenticationOptions({ userId: '~Nobody1', challengeKey: 'none' })).rejects.toMatchObject({ name: 'ValidationError', message: PASSKEY_ERRORS.noPasskeys });
  });

  it('draws challenges that read the same as base64 and base64url, and forgets expired ones when swept', async () => {
    const passkeys = t.services.passkeys;
    for (let i = 0; i < 20; i += 1) {
      const options = await passkeys.authenticationOptions({ userId: null, challengeKey: `many-${i}` });
      expect(options.challenge).toMatch(/^[A-Za-z0-9]{43}$/);
      expect(options).toMatchObject({ userVerification: 'required', allowCredentials: [], timeout: CEREMONY_MS });
    }
    const count = async () => Number(((await t.services.db('passkey_challenges').count({ n: '*' }).first()) as { n: number | string }).n);
    expect(await count()).toBeGreaterThanOrEqual(20);
    clock.advance(CEREMONY_MS + 1);
    await passkeys.sweep();
    expect(await count()).toBe(0);
  });
});
