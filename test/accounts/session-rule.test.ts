import { describe, expect, it } from 'vitest';
import { ACTIVE_STATES, canHoldSession, sessionEnded } from '../../server/accounts/session-rule.ts';
import { ProfileState } from '../../shared/index.ts';

const profile = (state: ProfileState, extra: { ddate?: number | null; tokenVersion?: number } = {}) => ({
  state,
  ddate: extra.ddate ?? null,
  tokenVersion: extra.tokenVersion ?? 0,
});

describe('a profile may hold a session', () => {
  it.each([...ACTIVE_STATES])('in state %s', (state) => {
    expect(canHoldSession(profile(state))).toBe(true);
  });

  it('when the credential recorded the version the profile still has', () => {
    expect(canHoldSession(profile('Active', { tokenVersion: 3 }), 3)).toBe(true);
  });
});

describe('a profile may not hold a session', () => {
  it.each(ProfileState.options.filter((state) => !ACTIVE_STATES.has(state)))('in state %s', (state) => {
    expect(canHoldSession(profile(state))).toBe(false);
  });

  it('once deleted, whatever its state', () => {
    expect(canHoldSession(profile('Active', { ddate: 1 }))).toBe(false);
  });

  it('when it does not exist', () => {
    expect(canHoldSession(null)).toBe(false);
    expect(canHoldSession(undefined)).toBe(false);
  });

  it('once its version has moved on from the one the credential recorded (reset, logout everywhere, block, merge)', () => {
    expect(canHoldSession(profile('Active', { tokenVersion: 4 }), 3)).toBe(false);
  });
});

describe('a session the rule no longer honours', () => {
  it('ends with a 401 that says so', () => {
    expect(sessionEnded()).toMatchObject({ status: 401, name: 'UnauthorizedError', message: 'Your session has ended. Please log in again.' });
  });
});
