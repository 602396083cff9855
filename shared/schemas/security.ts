import { z } from 'zod';
import { NewPassword } from './session.ts';

/**
 * "Password & security" (issue 18): changing the password while signed in, the person's own
 * sessions, and the security events of their audit trail. Not in the spec, which has no such
 * operations; the service's own pages (`/account/security`) and any client call them alike.
 */

/** `POST /password`: the current password is required; other sessions end unless told otherwise. */
export const ChangePasswordInput = z.strictObject({
  currentPassword: z.string().min(1, 'currentPassword cannot be empty').max(1024),
  newPassword: NewPassword,
  /** Default true: every other session of the person ends, this one stays. */
  logoutOtherSessions: z.boolean().optional(),
});
export type ChangePasswordInput = z.infer<typeof ChangePasswordInput>;

/** The answer: with other sessions ended, this session's new access token (also set as its cookie). */
export const ChangePasswordResult = z.strictObject({ status: z.literal('ok'), token: z.string().optional() });

/** One of the person's own live sessions, as the security page shows it. */
export const SessionInfo = z.strictObject({
  id: z.string(),
  /** Whether it is the session of this request. */
  current: z.boolean(),
  /** The browser and system read from the User-Agent (`bowser`), or null when none was kept. */
  browser: z.string().nullable(),
  os: z.string().nullable(),
  /** `desktop`, `mobile`, `tablet`, ... as bowser names the platform; null when unknown. */
  platform: z.string().nullable(),
  address: z.string().nullable(),
  /** Milliseconds since 1970. */
  createdAt: z.number(),
  lastSeenAt: z.number().nullable(),
});
export type SessionInfo = z.infer<typeof SessionInfo>;
export const SessionsResult = z.strictObject({ sessions: z.array(SessionInfo) });
export type SessionsResult = z.infer<typeof SessionsResult>;

/** `DELETE /sessions/{id}`: one of the caller's own sessions. */
export const EndSessionInput = z.strictObject({ id: z.string().min(1).max(64) });

/** One entry of the person's audit trail: a sign-in, a password change, a factor change, ... */
export const SecurityEvent = z.strictObject({
  action: z.string(),
  at: z.number(),
  /** Who did it, when not the person (a moderator, an impersonator). */
  actor: z.string(),
  address: z.string().nullable(),
  browser: z.string().nullable(),
  os: z.string().nullable(),
});
export type SecurityEvent = z.infer<typeof SecurityEvent>;
export const SecurityEventsResult = z.strictObject({ events: z.array(SecurityEvent) });
export type SecurityEventsResult = z.infer<typeof SecurityEventsResult>;
