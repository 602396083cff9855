import { z } from 'zod';
import { MfaStatus } from './mfa.ts';
import { OidcConsent } from './oidc.ts';
import { Profile } from './profile.ts';
import { SessionInfo } from './security.ts';
import { Email } from './session.ts';

/**
 * A person's own emails (remove, make preferred, undo a change from the mailed link) and their
 * data (the export, and deleting the account after a grace period): issue 27. Not in the spec,
 * whose clients change emails by posting the profile; the account pages and the typed client call
 * these procedures (`accounts.removeEmail`, …), and `GET /user/export` answers the export.
 */

/** `accounts.removeEmail`, `accounts.setPreferredEmail`: one of the caller's own addresses. */
export const OwnEmailInput = z.strictObject({ email: Email });
export type OwnEmailInput = z.infer<typeof OwnEmailInput>;

/** One of the caller's addresses, as the emails page lists them. */
export const OwnEmail = z.strictObject({ email: z.string(), confirmed: z.boolean(), preferred: z.boolean() });
export const OwnEmailsResult = z.strictObject({ emails: z.array(OwnEmail) });
export type OwnEmailsResult = z.infer<typeof OwnEmailsResult>;

/** What a mailed undo link undoes. */
export const EmailChangeKind = z.enum(['added', 'removed', 'preferred']);
export type EmailChangeKind = z.infer<typeof EmailChangeKind>;

/** `accounts.emailUndo` (a GET: nothing changes) and `accounts.undoEmailChange` (the POST). */
export const EmailUndoInput = z.strictObject({ token: z.string().min(1).max(200) });
export type EmailUndoInput = z.infer<typeof EmailUndoInput>;
/** The change a live undo link would undo; `live: false` for a used, expired or unknown link. */
export const EmailUndoPreview = z.union([
  z.strictObject({ live: z.literal(true), change: EmailChangeKind, email: z.string(), profileId: z.string(), expiresAt: z.number() }),
  z.strictObject({ live: z.literal(false) }),
]);
export type EmailUndoPreview = z.infer<typeof EmailUndoPreview>;
export const EmailUndoResult = z.strictObject({ change: EmailChangeKind, email: z.string(), sessionsEnded: z.literal(true) });
export type EmailUndoResult = z.infer<typeof EmailUndoResult>;

/**
 * `GET /user/export`, `accounts.exportData`: everything the service holds about the caller,
 * without a secret or a hash of one (no password hash, token, code, key or credential secret).
 */
export const DataExport = z.strictObject({
  exportedAt: z.number(),
  profile: Profile,
  emails: z.array(OwnEmail),
  usernames: z.array(z.string()),
  sessions: z.array(SessionInfo),
  applications: z.array(OidcConsent),
  /** The audit log's entries about the person (what, when, by whom, and what was recorded with it). */
  activity: z.array(z.strictObject({ action: z.string(), at: z.number(), actor: z.string(), details: z.record(z.string(), z.unknown()).optional() })),
  notes: z.strictObject({ signed: z.array(z.string()), authored: z.array(z.string()) }),
  uploads: z.array(z.strictObject({ url: z.string(), invitation: z.string(), field: z.string(), size: z.number(), createdAt: z.number() })),
  factors: MfaStatus,
  passkeys: z.array(z.strictObject({ name: z.string(), createdAt: z.number(), lastUsedAt: z.number().nullable() })),
  deletion: z.strictObject({ dueAt: z.number().nullable() }),
});
export type DataExport = z.infer<typeof DataExport>;

/**
 * `accounts.requestDeletion`: the password typed again, or the profile id typed again by a
 * session that proved the person within ten minutes (signed in, or `POST /mfa/reauthenticate`).
 */
export const RequestDeletionInput = z
  .strictObject({ password: z.string().min(1).max(1024).optional(), confirmId: z.string().min(1).max(300).optional() })
  .refine((input) => input.password !== undefined || input.confirmId !== undefined, { message: 'Type your password, or your profile id', path: ['password'] });
export type RequestDeletionInput = z.infer<typeof RequestDeletionInput>;

/** Whether the account is to be deleted, when; and whether this session's sign-in cancelled a deletion. */
export const DeletionStatus = z.strictObject({ dueAt: z.number().nullable(), cancelledBySignIn: z.boolean() });
export type DeletionStatus = z.infer<typeof DeletionStatus>;
export const DeletionRequested = z.strictObject({ dueAt: z.number() });
