/**
 * The moderation transition table (server/accounts/moderation.ts) as a pure rule, and through
 * the `accounts.moderate` procedure called without HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decide } from '../../server/accounts/moderation.ts';
import { ModerationDecision, ProfileState, type SessionResult } from '../../shared/index.ts';
import { startServices, type TestServices } from '../helpers/caller.ts';
import { PASSWORD } from '../helpers/users.ts';

const ACTIVE = ['Active', 'Active Institutional', 'Active Automatic'];
/** The states each decision is allowed in (a deleted profile aside), as the table says. */
const ALLOWED: Record<ModerationDecision, (state: ProfileState, deleted: boolean) => boolean> = {
  accept: (state) => ['Needs Moderation', 'Rejected', 'Limited'].includes(state),
  reject: (state) => state === 'Needs Moderation',
  block: (state) => state !== 'Blocked',
  unblock: (state) => state === 'Blocked',
  delete: (_state, deleted) => !deleted,
  restore: (_state, deleted) => deleted,
  limit: (state) => ACTIVE.includes(state),
};

const cases = ProfileState.options.flatMap((state) =>
  [false, true].flatMap((deleted) => ModerationDecision.options.map((decision) => ({ state, deleted, decision }))),
);

describe('the moderation transition table', () => {
  it.each(cases.filter((c) => c.state !== 'Merged' && ALLOWED[c.decision](c.state, c.deleted)))(
    '$decision is allowed in $state (deleted: $deleted)',
    ({ state, deleted, decision }) => {
      const ddate = deleted ? 1 : null;
      const next = decide({ state, ddate, pastStates: [{ state: 'Active', date: 0, setBy: 'x' }] }, decision, 99);
      const expected = {
        accept: { state: 'Active', ddate, endSessions: false },
        reject: { state: 'Rejected', ddate, endSessions: false },
        block: { state: 'Blocked', ddate, endSessions: true },
        unblock: { state: 'Active', ddate, endSessions: false },
        delete: { state, ddate: 99, endSessions: true },
        restore: { state, ddate: null, endSessions: false },
        limit: { state: 'Limited', ddate, endSessions: false },
      }[decision];
      expect(next).toEqual(expected);
    },
  );

  it.each(cases.filter((c) => c.state === 'Merged' || !ALLOWED[c.decision](c.state, c.deleted)))(
    '$decision is refused in $state (deleted: $deleted), naming the decision',
    ({ state, deleted, decision }) => {
      expect(() => decide({ state, ddate: deleted ? 1 : null, pastStates: [] }, decision, 99)).toThrow(
        expect.objectContaining({ name: 'ValidationError', status: 400, details: { path: 'decision' } }),
      );
    },
  );

  it('unblock returns to the state before the last block, or Inactive for a profile never activated', () => {
    const blocked = (states: ProfileState[]) => ({ state: 'Blocked' as const, ddate: null, pastStates: states.map((state, date) => ({ state, date, setBy: 'x' })) });
    expect(decide(blocked(['Inactive', 'Active', 'Limited', 'Blocked']), 'unblock', 9).state).toBe('Limited');
    expect(decide(blocked(['Inactive', 'Active', 'Blocked', 'Active', 'Blocked']), 'unblock', 9).state).toBe('Active');
    expect(decide(blocked(['Blocked']), 'unblock', 9).state).toBe('Inactive');
  });
});

describe('accounts.moderate', () => {
  let t: TestServices;
  let moderatorToken: string;
  let memberToken: string;
  let target: string;

  beforeAll(async () => {
    t = await startServices();
    const accounts = t.services.signUp;
    await accounts.createUser({ email: 'mod@example.org', password: PASSWORD, fullname: 'Mo Derator', state: 'Active', role: 'moderator' });
    await accounts.createUser({ email: 'member@example.org', password: PASSWORD, fullname: 'Mem Ber', state: 'Active' });
    target = await accounts.createUser({ email: 'new@example.org', password: PASSWORD, fullname: 'New Comer', state: 'Needs Moderation' });
    moderatorToken = ((await t.caller().accounts.login({ id: 'mod@example.org', password: PASSWORD })) as SessionResult).token;
    memberToken = ((await t.caller().accounts.login({ id: 'member@example.org', password: PASSWORD })) as SessionResult).token;
  });
  afterAll(() => t.close());

  it('moves a profile along the table for a moderator', async () => {
    const moderator = t.caller({ accessToken: moderatorToken });
    expect(await moderator.accounts.moderate({ id: target, decision: 'accept', sendMail: false })).toMatchObject({ id: target, state: 'Active' });
    expect(await moderator.accounts.moderate({ id: target, decision: 'limit' })).toMatchObject({ state: 'Limited' });
  });

  it('refuses a decision the table does not allow in the profile\'s state, naming the decision', async () => {
    const moderator = t.caller({ accessToken: moderatorToken });
    await expect(moderator.accounts.moderate({ id: target, decision: 'unblock' })).rejects.toMatchObject({
      cause: { name: 'ValidationError', status: 400, details: { path: 'decision' } },
    });
  });

  it('is for moderators and super users only, and for the signed-in', async () => {
    await expect(t.caller({ accessToken: memberToken }).accounts.moderate({ id: target, decision: 'block' })).rejects.toMatchObject({
      cause: { name: 'ForbiddenError', status: 403 },
    });
    await expect(t.caller().accounts.moderate({ id: target, decision: 'block' })).rejects.toMatchObject({ cause: { name: 'UnauthorizedError', status: 401 } });
  });

  it('refuses an input its schema does not describe, naming the field', async () => {
    const moderator = t.caller({ accessToken: moderatorToken });
    await expect(moderator.accounts.moderate({ id: target, decision: 'promote' } as never)).rejects.toMatchObject({
      cause: { name: 'ValidationError', status: 400, details: { path: 'decision' } },
    });
  });
});
