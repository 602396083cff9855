import { z } from 'zod';
import { AccountId, NonEmptyString } from './common.ts';
import { Profile, ProfileContent, ProfileReference, SimplifiedProfile } from './profile.ts';
import { Activatable, Resettable } from './tokens.ts';

/** A session lasts one hour unless the login asks otherwise, and never more than a week. */
export const DEFAULT_SESSION_SECONDS = 60 * 60;
export const MAX_SESSION_SECONDS = 7 * 24 * 60 * 60;

/** A new password's length, in Unicode code points (an emoji is one): NIST SP 800-63B §5.1.1.2. */
export const MIN_PASSWORD_LENGTH = 8;
export const MAX_PASSWORD_LENGTH = 256;

/**
 * The part of the password policy a client can check cheaply: 8 to 256 characters, counted as
 * code points, with no composition rule and no truncation. The server also refuses common and
 * breached passwords and the person's own email, name or id (`server/accounts/password-policy.ts`).
 * Applied wherever a password is chosen, never when one is checked at login.
 */
export const NewPassword = z
  .string()
  .min(1, { message: 'Enter a password' })
  .max(MAX_PASSWORD_LENGTH * 2, { message: `The password must be at most ${MAX_PASSWORD_LENGTH} characters` })
  .superRefine((password, ctx) => {
    if (password.length === 0 || password.length > MAX_PASSWORD_LENGTH * 2) return;
    const length = [...password].length;
    if (length < MIN_PASSWORD_LENGTH) {
      ctx.addIssue({ code: 'too_small', origin: 'string', minimum: MIN_PASSWORD_LENGTH, inclusive: true, input: password, message: `The password must be at least ${MIN_PASSWORD_LENGTH} characters` });
    } else if (length > MAX_PASSWORD_LENGTH) {
      ctx.addIssue({ code: 'too_big', origin: 'string', maximum: MAX_PASSWORD_LENGTH, inclusive: true, input: password, message: `The password must be at most ${MAX_PASSWORD_LENGTH} characters` });
    }
  });

export const Email = z.email().max(254);

/** A human-verification token, as a challenge widget hands it to the page. */
export const HumanVerificationToken = z.string().max(4096);

/** The parts of a person's name as typed; `GET /tildeusername` turns them into `~First_Last1`. */
export const NameParts = z.strictObject({
  first: NonEmptyString.max(100),
  middle: z.string().max(100).optional(),
  last: NonEmptyString.max(100),
});
export type NameParts = z.infer<typeof NameParts>;

/**
 * `POST /register` (not in the spec; every client of this kind of service expects it).
 * A name is given either as `fullname` or as `name: {first, middle?, last}`, never both.
 * `token` is the human-verification token.
 */
export const RegisterInput = z
  .strictObject({
    email: Email,
    password: NewPassword,
    fullname: NonEmptyString.max(300).optional(),
    name: NameParts.optional(),
    token: HumanVerificationToken.nullish(),
  })
  .superRefine((body, ctx) => {
    if ((body.fullname === undefined) === (body.name === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['fullname'], message: 'Give either fullname or name, exactly one' });
    }
  });
export type RegisterInput = z.infer<typeof RegisterInput>;

export const RegisterResult = z.strictObject({ id: z.string(), status: z.literal('ok') });
export type RegisterResult = z.infer<typeof RegisterResult>;

/** `POST /login` (the spec does not show it): an email or a tilde id, and the password. */
export const LoginInput = z.strictObject({
  // The wording of the real platform's answer, which its clients and their tests match.
  id: z.string({ error: 'id cannot be empty or missing' }).min(1, 'id cannot be empty or missing').max(254),
  password: z.string({ error: 'password cannot be empty or missing' }).min(1, 'password cannot be empty or missing').max(1024),
  /**
   * Lifetime of the session's access token in seconds: 1 to one week, one hour by default. The
   * Python client always sends the key, as `null` when its caller gave none.
   */
  expiresIn: z.int().min(1).max(MAX_SESSION_SECONDS).nullish(),
  /**
   * A human-verification token, needed only after the account's sign-in attempts ran out for
   * browsers that have not signed in to it before (the answer was a 429 with
   * `details.humanVerification: "required"`), as `POST /register` takes it.
   */
  token: HumanVerificationToken.nullish(),
});
export type LoginInput = z.infer<typeof LoginInput>;

export const SessionUser = z.strictObject({
  /** The login email, as the spec says of every token-issuing operation. */
  id: z.string(),
  profile: SimplifiedProfile,
});

/** The answer of every token-issuing operation: login, refresh, activation, logout-all. */
export const SessionResult = z.strictObject({ token: z.string(), user: SessionUser }).meta({ id: 'SessionResult' });
export type SessionResult = z.infer<typeof SessionResult>;

export const Empty = z.strictObject({});

const impersonatorFields = {
  id: z.string(),
  isSuperUser: z.boolean().optional(),
  isSupportUser: z.boolean().optional(),
  isOpenReviewGroup: z.boolean().optional(),
  isPrivilegedUser: z.boolean().optional(),
  isVenueid: z.boolean().optional(),
  isActiveVenueid: z.boolean().optional(),
  isActiveVenueOrganizer: z.boolean().optional(),
  isVenueOrganizer: z.boolean().optional(),
  profile: SimplifiedProfile.optional(),
};

/** An impersonator may carry one nested impersonator of the same shape, and no deeper one. */
export const Impersonator = z.strictObject({
  ...impersonatorFields,
  impersonator: z.strictObject(impersonatorFields).optional(),
}).meta({ id: 'Impersonator' });
export type Impersonator = z.infer<typeof Impersonator>;

export const ImpersonateInput = z.strictObject({ groupId: NonEmptyString });
export type ImpersonateInput = z.infer<typeof ImpersonateInput>;

export const ImpersonateResult = z.strictObject({
  token: z.string(),
  user: z.strictObject({
    id: z.string(),
    profile: SimplifiedProfile,
    disallowDataModification: z.boolean(),
    impersonatables: z.array(NonEmptyString),
    impersonator: Impersonator,
  }),
});
export type ImpersonateResult = z.infer<typeof ImpersonateResult>;

/**
 * `PUT /impersonators` (super users) and `npm run admin -- impersonators set`: who may
 * impersonate a person, written to the `impersonators` of the person's own `~` group. Each entry
 * is a tilde id, an email or a group id; an empty list takes the grant back.
 */
export const SetImpersonatorsInput = z.strictObject({
  user: NonEmptyString.max(300),
  impersonators: z.array(NonEmptyString.max(300)).max(50),
});
export type SetImpersonatorsInput = z.infer<typeof SetImpersonatorsInput>;

export const ImpersonatorsResult = z.strictObject({
  /** The person's profile id, whichever of their ids or emails was given. */
  id: z.string(),
  impersonators: z.array(z.string()),
});
export type ImpersonatorsResult = z.infer<typeof ImpersonatorsResult>;

// ---- token-driven account operations (bodies of the spec's Users table) ----------------------

/** `PUT /activate/{token}`. */
export const ActivateInput = z.strictObject({ content: ProfileContent.optional() });

/** `POST /activatable`: re-send the activation mail. */
export const ActivatableRequest = z.strictObject({ id: AccountId });

/** `POST /resettable`: `token` is the human-verification token. */
export const ResettableRequest = z.strictObject({ id: AccountId, token: HumanVerificationToken.nullable().optional() });

/** `POST /user/confirm`: the address to add, 1 to 254 characters, shaped as an email. */
export const ConfirmEmailInput = z.strictObject({
  alternate: z.email().min(1).max(254),
  username: NonEmptyString.optional(),
});

/** `PUT /activatelink/{token}`: `token` here is the 6-digit code from the mail. */
export const ActivateLinkInput = z.strictObject({ email: z.email().max(254), token: NonEmptyString.max(100) });

export const StatusResult = z.strictObject({ status: z.string() });

/** `GET /tildeusername`: every part optional, as the spec says. */
export const TildeUsernameQuery = z.strictObject({
  first: z.string().max(100).optional(),
  middle: z.string().max(100).optional(),
  last: z.string().max(100).optional(),
  fullname: NonEmptyString.max(300).optional(),
});
export type TildeUsernameQuery = z.infer<typeof TildeUsernameQuery>;

export const TildeUsernameResult = z.strictObject({ username: z.string() });

// ---- answers and path-parameter inputs of the account lifecycle ----------------------------

/** A path segment carrying a one-time token. */
export const TokenParam = z.string().min(1).max(200);

/** `GET /activatable/{token}`. */
export const ActivatableQuery = z.strictObject({ token: TokenParam });

export const ActivatableResult = z.strictObject({
  profile: Profile,
  activatable: Activatable,
  prefixed_positions: z.array(z.string()),
  institutions: z.array(z.string()),
});
export type ActivatableResult = z.infer<typeof ActivatableResult>;

/** `PUT /activate/{token}`: the path token and the body. */
export const ActivateRequest = ActivateInput.extend({ token: TokenParam });
export type ActivateRequest = z.infer<typeof ActivateRequest>;

/** Activation logs the person in, unless the profile now waits for moderation (no token then). */
export const ActivateResult = z.strictObject({ token: z.string().optional(), user: SessionUser });
export type ActivateResult = z.infer<typeof ActivateResult>;

export const IdResult = z.strictObject({ id: z.string() });

/** `GET /resettable/{token}`. */
export const ResettableQuery = z.strictObject({ token: TokenParam });
export const ResettableResult = z.strictObject({ resettable: Resettable });
export type ResettableResult = z.infer<typeof ResettableResult>;

/** `PUT /reset/{token}`: the new password follows the password policy. */
export const ResetPasswordRequest = z.strictObject({ token: TokenParam, password: NewPassword });
export type ResetPasswordRequest = z.infer<typeof ResetPasswordRequest>;

/**
 * The reset page's form (not in the spec): the token, the new password, and "Log me out of all
 * other sessions" (`PasswordResetService.resetInBrowser`).
 */
export const ResetPasswordInBrowserInput = z.strictObject({ token: TokenParam, password: NewPassword, logoutOtherSessions: z.boolean() });
export type ResetPasswordInBrowserInput = z.infer<typeof ResetPasswordInBrowserInput>;
/** `signedInHere`: this browser is signed in to the account whose password was reset, and stays so. */
export const ResetPasswordInBrowserResult = z.strictObject({ status: z.literal('ok'), signedInHere: z.boolean() });
export type ResetPasswordInBrowserResult = z.infer<typeof ResetPasswordInBrowserResult>;

/** An old mailed link (activation or reset), to send a new one from (the pages' "Send me a new link"). */
export const OldLinkInput = z.strictObject({ token: z.string().max(200) });
export type OldLinkInput = z.infer<typeof OldLinkInput>;
/** Where the new link went, masked (`r•••@example.org`), or null for a link that was never ours. */
export const NewLinkResult = z.strictObject({ maskedEmail: z.string().nullable() });
export type NewLinkResult = z.infer<typeof NewLinkResult>;
/** Whether an old activation link was made for the signed-in person. */
export const OwnLinkResult = z.strictObject({ own: z.boolean() });
export type OwnLinkResult = z.infer<typeof OwnLinkResult>;
/** The address a live email-confirmation link names ('' for any other token). */
export const LinkAddressResult = z.strictObject({ email: z.string() });
export type LinkAddressResult = z.infer<typeof LinkAddressResult>;

/** `POST /user/confirm` (signed in) or `POST /user/confirm/{activationToken}` (a guest activating). */
export const ConfirmEmailRequest = ConfirmEmailInput.extend({ activationToken: TokenParam.optional() });
export type ConfirmEmailRequest = z.infer<typeof ConfirmEmailRequest>;
export const ConfirmEmailResult = z.strictObject({ alternate: z.string() });

/** `PUT /activatelink/{activationToken}` (a guest activating) or `PUT /activatelink` (signed in). */
export const ActivateLinkRequest = ActivateLinkInput.extend({ activationToken: TokenParam.optional() });
export type ActivateLinkRequest = z.infer<typeof ActivateLinkRequest>;
export const ActivateLinkResult = z.union([z.strictObject({ confirmedEmail: z.string() }), ProfileReference]);
export type ActivateLinkResult = z.infer<typeof ActivateLinkResult>;
