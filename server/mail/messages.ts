/**
 * What every mail of the accounts says, and the links it carries: one pure function per mail,
 * given what the mail names (the pages' `webUrl`, a token or code, ids, how long something
 * lasts) and answering its subject and text. The sending service adds the address. Texts kept
 * together can be translated together, and a page's path is written once for every mail that
 * links to it.
 */
/**
 * A mail before it has an address. `kind` names which mail it is, for the outbox's operators
 * (`admin mail list`) and its metrics; never a person's data.
 */
export interface MailContent {
  subject: string;
  text: string;
  kind: MailKind;
}

/** Every mail the service sends. */
export type MailKind =
  | 'activation'
  | 'sign-up-attempt'
  | 'activation-pending'
  | 'profile-accepted'
  | 'profile-rejected'
  | 'password-reset'
  | 'password-changed'
  | 'email-confirmation'
  | 'duplicate-profile'
  | 'verification-code'
  | 'sign-in-settings-changed'
  | 'email-changed'
  | 'deletion-requested'
  | 'new-browser-sign-in';

// ---- links --------------------------------------------------------------------------------------
// `webUrl` is `config.webUrl`: WEB_URL, a frontend that answers the same paths, or by default the
// service's own pages under `/account`.

/** The page that activates a new profile (the sign-up mail's link). */
export function activationLink(webUrl: string, token: string): string {
  return `${webUrl}/profile/activate?token=${encodeURIComponent(token)}`;
}

/** The page that sets a new password (the reset mail's link). */
export function resetLink(webUrl: string, token: string): string {
  return `${webUrl}/user/password?token=${encodeURIComponent(token)}`;
}

/** The page that confirms an added address, where the mailed code is typed: one of this service's own pages (`Config.pagesUrl`). */
export function emailConfirmationLink(pagesUrl: string, token: string): string {
  return `${pagesUrl}/confirm?token=${encodeURIComponent(token)}`;
}

/** The page that asks for a reset mail, for someone who did not expect the mail. */
export function resetRequestLink(webUrl: string): string {
  return `${webUrl}/reset`;
}

// ---- sign-up and activation ---------------------------------------------------------------------

/** The activation link and code of a new profile. */
export function activationMail(m: { webUrl: string; profileId: string; token: string; code: string; validForSeconds: number }): MailContent {
  return {
    kind: 'activation',
    subject: 'Signup confirmation',
    text:
      `Thank you for signing up, ${m.profileId}.\n\n` +
      `To activate your account, open this link:\n${activationLink(m.webUrl, m.token)}\n\n` +
      `or enter this code: ${m.code}\n\n` +
      `The link and the code expire in ${Math.round(m.validForSeconds / 86400)} days.\n\n` +
      // Activation keeps the password of whoever signed up (`SignUpService.register`), who may
      // not be the person reading this.
      `If you did not sign up, do not activate: whoever did chose the password (if you already activated, set your own at ${resetRequestLink(m.webUrl)}).\n`,
  };
}

/** To the owner of an address someone tried to sign up with again (the form answers as for a new one). */
export function signUpAttemptMail(m: { webUrl: string; email: string }): MailContent {
  return {
    kind: 'sign-up-attempt',
    subject: 'Sign-up attempt with your email address',
    text:
      `Someone tried to create a new account with ${m.email}, which already belongs to an account.\n\n` +
      `If it was you, sign in, or reset your password at ${resetRequestLink(m.webUrl)}.\n` +
      'If it was not you, you can ignore this message.\n',
  };
}

/** An activated profile that waits for the moderators. */
export function activationPendingMail(): MailContent {
  return {
    kind: 'activation-pending',
    subject: 'Activation pending',
    text:
      'Thank you for completing your profile.\n\n' +
      'Your profile will be reviewed by our moderators, which usually takes a few days. ' +
      'You will receive an email when it is accepted, and can log in then.\n',
  };
}

// ---- moderation ---------------------------------------------------------------------------------

/** The moderators accepted the profile. */
export function profileAcceptedMail(): MailContent {
  return {
    kind: 'profile-accepted', subject: 'Profile activation status', text: 'Your profile has been accepted. You can now log in.\n' };
}

/** The moderators rejected the profile, with their reason if they gave one. */
export function profileRejectedMail(m: { reason: string | null | undefined }): MailContent {
  return {
    kind: 'profile-rejected',
    subject: 'Profile activation status',
    text:
      `Your profile was not accepted.\n\nReason: ${m.reason ?? 'not given'}\n\n` +
      'You can update your profile and submit it again for moderation.\n',
  };
}

// ---- passwords ----------------------------------------------------------------------------------

/** The reset link, asked for with the account's id or address. */
export function passwordResetMail(m: { webUrl: string; profileId: string; token: string; validForSeconds: number }): MailContent {
  return {
    kind: 'password-reset',
    subject: 'Password reset',
    text:
      `A password reset was requested for the account ${m.profileId}.\n\n` +
      `To choose a new password, open this link within ${Math.round(m.validForSeconds / 60)} minutes:\n` +
      `${resetLink(m.webUrl, m.token)}\n\n` +
      'If you did not ask for this, you can ignore this message: your password stays as it is.\n',
  };
}

/** The password was changed while signed in: the owner hears of it, in case it was not them. */
export function passwordChangedMail(m: { webUrl: string; profileId: string; otherSessionsEnded: boolean }): MailContent {
  return {
    kind: 'password-changed',
    subject: 'Your password was changed',
    text:
      `The password of your account ${m.profileId} was changed${m.otherSessionsEnded ? ', and every other session was signed out' : ''}.\n\n` +
      `If this was not you, reset your password at once: ${resetRequestLink(m.webUrl)}\n`,
  };
}

// ---- added addresses ----------------------------------------------------------------------------

/** The code (and its page) that confirms an address a profile asked to add. */
export function emailConfirmationMail(m: { pagesUrl: string; profileId: string; token: string; code: string; validForSeconds: number }): MailContent {
  return {
    kind: 'email-confirmation',
    subject: 'Email confirmation',
    text:
      `The profile ${m.profileId} asked to add this address.\n\n` +
      `To confirm it, enter this code: ${m.code}\n` +
      `or open ${emailConfirmationLink(m.pagesUrl, m.token)} and enter it there.\n\n` +
      `The code expires in ${Math.round(m.validForSeconds / 3600)} hours. If this was not you, ignore this message.\n`,
  };
}

/** The address a profile asked to add belongs to another profile: the code merges that one into the asker. */
export function duplicateProfileMail(m: { profileId: string; email: string; duplicateId: string; code: string; validForSeconds: number }): MailContent {
  return {
    kind: 'duplicate-profile',
    subject: 'Duplicate Profile Found',
    text:
      `The profile ${m.profileId} asked to add ${m.email}, which belongs to the profile ${m.duplicateId}.\n\n` +
      `If both profiles are yours, ${m.duplicateId} can be merged into ${m.profileId} with this code: ${m.code}\n\n` +
      `The code expires in ${Math.round(m.validForSeconds / 3600)} hours. If this was not you, ignore this message and nothing changes.\n`,
  };
}

// ---- multi-factor sign-in -----------------------------------------------------------------------

/** A 6-digit code for a second step or a re-authentication; the real platform's clients read it between `**`. */
export function verificationCodeMail(m: { code: string; purpose: string; validForSeconds: number }): MailContent {
  return {
    kind: 'verification-code',
    subject: 'Verification Code',
    text:
      `Your verification code is: **${m.code}**\n\n` +
      `Enter it to ${m.purpose}. It is valid for ${m.validForSeconds / 60} minutes, and a newer code replaces it.\n\n` +
      'If you did not try to sign in, someone knows your password: please change it.\n',
  };
}

/** A change to how the person signs in (a factor added or removed, a recovery code used), `when` as an ISO time. */
export function signInSettingsChangedMail(m: { what: string; profileId: string; when: string }): MailContent {
  return {
    kind: 'sign-in-settings-changed',
    subject: 'Your sign-in settings changed',
    text:
      `${m.what} (account ${m.profileId}, ${m.when}).\n\n` +
      'If this was not you, change your password now and contact the support team: someone may have access to your account.\n',
  };
}

// ---- a person's emails and data (issue 27) -------------------------------------------------------

/** The page that undoes a change to a person's emails (the old address's mail): one of this service's own pages (`Config.pagesUrl`). */
export function emailUndoLink(pagesUrl: string, token: string): string {
  return `${pagesUrl}/emails/undo?token=${encodeURIComponent(token)}`;
}

/**
 * A change to a person's emails, told to the address that had the most to lose by it (the
 * removed address; the preferred one before the change; the preferred one, of an added address),
 * with a link that undoes it for `validForSeconds`.
 */
export function emailChangedMail(m: { pagesUrl: string; profileId: string; change: 'added' | 'removed' | 'preferred'; email: string; token: string; validForSeconds: number }): MailContent {
  const what = {
    added: { subject: 'An email address was added to your account', line: `The address ${m.email} was added to your account ${m.profileId}.` },
    removed: { subject: 'This email address was removed from your account', line: `The address ${m.email} was removed from your account ${m.profileId}. Mail for the account no longer comes here, and it cannot be used to sign in or reset the password.` },
    preferred: { subject: 'Your preferred email address was changed', line: `The preferred address of your account ${m.profileId} is now ${m.email}, not this one.` },
  }[m.change];
  return {
    kind: 'email-changed',
    subject: what.subject,
    text:
      `${what.line}\n\n` +
      `If this was you, there is nothing to do.\n` +
      `If it was not you, undo it within ${Math.round(m.validForSeconds / 86400)} days: ${emailUndoLink(m.pagesUrl, m.token)}\n` +
      'Undoing it signs the account out everywhere; then reset your password.\n',
  };
}

/** The page where a person cancels their account's deletion by signing in. */
export function signInLink(webUrl: string): string {
  return `${webUrl}/login`;
}

/** A person asked to delete their account: when it happens, and how to cancel it (`when` as a readable UTC time). */
export function deletionRequestedMail(m: { webUrl: string; profileId: string; when: string }): MailContent {
  return {
    kind: 'deletion-requested',
    subject: 'Your account will be deleted',
    text:
      `You asked to delete your account ${m.profileId}. It will be deleted on ${m.when}: your names, emails, history and links are removed, and your notes keep only a placeholder signature.\n\n` +
      `To keep your account, sign in before then: signing in cancels the deletion. ${signInLink(m.webUrl)}\n\n` +
      'If you did not ask for this, sign in now and change your password.\n',
  };
}

// ---- the security pages (issue 27) ---------------------------------------------------------------

/** The page behind a new-browser mail's "This was not me" link (the service's own page). */
export function notMeLink(baseUrl: string, token: string): string {
  return `${baseUrl}/account/security/not-me?token=${encodeURIComponent(token)}`;
}

/**
 * A sign-in from a browser the account had not signed in from before (`when` as a readable UTC
 * time, `from` as "Firefox on Linux (192.0.2.1)"), with one link that ends every session,
 * revokes every application and starts a password reset, for `validForSeconds`.
 */
export function newBrowserSignInMail(m: { baseUrl: string; profileId: string; when: string; from: string; token: string; validForSeconds: number }): MailContent {
  return {
    kind: 'new-browser-sign-in',
    subject: 'A new sign-in to your account',
    text:
      `Your account ${m.profileId} was signed in to from a browser it had not been used in before: ${m.from}, on ${m.when}.\n\n` +
      'If this was you, there is nothing to do.\n\n' +
      `If it was not you, open this link within ${Math.round(m.validForSeconds / 86400)} days: ${notMeLink(m.baseUrl, m.token)}\n` +
      'It signs your account out everywhere, revokes every application you allowed, and mails you a link to choose a new password.\n',
  };
}
