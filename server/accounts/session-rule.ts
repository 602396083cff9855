import { AppError } from '../../shared/errors.ts';
import type { ProfileState } from '../../shared/index.ts';

/** The states in which a profile may sign in and hold sessions (`Limited` may, but not author notes). */
export const ACTIVE_STATES: ReadonlySet<ProfileState> = new Set(['Active', 'Active Institutional', 'Active Automatic', 'Limited']);

/** What the rule reads of a profile. */
export interface SessionHolder {
  state: ProfileState;
  ddate: number | null;
  tokenVersion: number;
}

/**
 * THE RULE: whether a profile may still hold a session. Every credential this service issues
 * (an access token, a refresh token, an impersonation session, an application's sign-in code or
 * access token) is honoured only while the profile it stands for
 * - exists and is not deleted (`ddate` is null);
 * - is in one of `ACTIVE_STATES` (not Inactive, Needs Moderation, Rejected, Blocked or Merged);
 * - and, when the credential recorded the profile's `tokenVersion` when it was issued, still
 *   has that version: a password reset, logging out of all devices, a block, a deletion and a
 *   merge move the version on, and so end every credential issued before.
 *
 * A refresh of a live session checks it in SQL instead, in the statement that rotates the
 * session (`ROTATE_LIVE` in `repository/sessions.ts`): a change here must be made there too,
 * and `test/db/refresh-in-one-statement.test.ts` given the new case.
 */
export function canHoldSession(profile: SessionHolder | null | undefined, tokenVersion?: number): profile is SessionHolder {
  if (!profile || profile.ddate !== null || !ACTIVE_STATES.has(profile.state)) return false;
  return tokenVersion === undefined || profile.tokenVersion === tokenVersion;
}

/** The answer to a credential the rule no longer honours. */
export function sessionEnded(): AppError {
  return new AppError('UnauthorizedError', 'Your session has ended. Please log in again.');
}
