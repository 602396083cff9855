import { z } from 'zod';
import { queryInt } from './common.ts';
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

/**
 * How a sign-in was made (the activity log and the sessions list say it in words): the password
 * alone, the password and a second step (an authenticator app's code, a mailed code, a passkey,
 * a recovery code), a passkey alone, the password in a browser remembered for the second step,
 * or the session activation opens.
 */
export const SignInMethod = z.enum(['password', 'password+totp', 'password+emailOtp', 'password+passkey', 'password+recovery', 'passkey', 'remembered', 'activation']);
export type SignInMethod = z.infer<typeof SignInMethod>;

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
  /** How the person signed in to it, when recorded. */
  method: SignInMethod.optional(),
  /** The application whose sign-in page it was signed in on, when it was. */
  client: z.string().optional(),
});
export type SessionInfo = z.infer<typeof SessionInfo>;
export const SessionsResult = z.strictObject({ sessions: z.array(SessionInfo) });
export type SessionsResult = z.infer<typeof SessionsResult>;

/** `DELETE /sessions/{id}`: one of the caller's own sessions. */
export const EndSessionInput = z.strictObject({ id: z.string().min(1).max(64) });

/** One entry of the person's audit trail: a sign-in, a password change, a factor change, ... */
export const SecurityEvent = z.strictObject({
  /** Its place in the log: the `before` that pages back from it. */
  id: z.number().int().optional(),
  action: z.string(),
  at: z.number(),
  /** Who did it, when not the person (a moderator, an impersonator). */
  actor: z.string(),
  address: z.string().nullable(),
  browser: z.string().nullable(),
  os: z.string().nullable(),
  /** A sign-in: how it was made. */
  method: SignInMethod.optional(),
  /** A sign-in through an application's sign-in page, an application allowed or revoked: its name. */
  client: z.string().optional(),
  /** An email added, removed, made preferred or restored: the address. */
  email: z.string().optional(),
  /** A wrong second-step code: the method it was typed for. */
  factor: z.string().optional(),
});
export type SecurityEvent = z.infer<typeof SecurityEvent>;
/** `GET /security/events`: the newest first; `before` (an event's `id` of an earlier page's `older`) pages back. */
export const SecurityEventsInput = z.strictObject({ before: queryInt(1, Number.MAX_SAFE_INTEGER).optional() }).optional();
export type SecurityEventsInput = z.infer<typeof SecurityEventsInput>;
export const SecurityEventsResult = z.strictObject({
  events: z.array(SecurityEvent),
  /** The `before` of the next page of older events; null when there are none. */
  older: z.number().int().nullable().optional(),
});
export type SecurityEventsResult = z.infer<typeof SecurityEventsResult>;

/** "This was not me" (the mail on a sign-in from a new browser): the link's token. */
export const NotMeInput = z.strictObject({ token: z.string().min(1).max(128) });
export type NotMeInput = z.infer<typeof NotMeInput>;
/** What the link's confirmation page shows: the sign-in it is about, when the link is still good. */
export const NotMeLink = z.strictObject({
  live: z.boolean(),
  at: z.number().optional(),
  browser: z.string().nullable().optional(),
  os: z.string().nullable().optional(),
  address: z.string().nullable().optional(),
  /** What was added to the account from that sign-in on, which confirming removes (the person's own additions in that time too). */
  addedSince: z
    .strictObject({ passkeys: z.array(z.string()), authenticatorApp: z.boolean(), emailCodes: z.boolean(), emails: z.array(z.string()) })
    .optional(),
});
export type NotMeLink = z.infer<typeof NotMeLink>;
/** Done: every session ended, every application revoked, a reset link mailed to `maskedEmail`. */
export const NotMeResult = z.strictObject({ status: z.literal('ok'), maskedEmail: z.string().nullable() });
export type NotMeResult = z.infer<typeof NotMeResult>;
