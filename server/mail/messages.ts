/**
 * What every mail of the accounts says, and the links it carries: one pure function per mail,
 * given what the mail names (the pages' `webUrl`, a token or code, ids, how long something
 * lasts) and answering its subject and text. The sending service adds the address. Texts kept
 * together can be translated together, and a page's path is written once for every mail that
 * links to it.
 */
import type { MailMessage } from './mailer.ts';

/** A mail before it has an address. */
export type MailContent = Pick<MailMessage, 'subject' | 'text'>;

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

/** The page that confirms an added address, where the mailed code is typed. */
export function emailConfirmationLink(webUrl: string, token: string): string {
  return `${webUrl}/confirm?token=${encodeURIComponent(token)}`;
}

/** The page that asks for a reset mail, for someone who did not expect the mail. */
export function resetRequestLink(webUrl: string): string {
  return `${webUrl}/reset`;
}

// ---- sign-up and activation ---------------------------------------------------------------------

/** The activation link and code of a new profile. */
export function activationMail(m: { webUrl: string; profileId: string; token: string; code: string; validForSeconds: number }): MailContent {
  return {
    subject: 'Signup confirmation',
    text:
      `Thank you for signing up, ${m.profileId}.\n\n` +
      `To activate your account, open this link:\n${activationLink(m.webUrl, m.token)}\n\n` +
      `or enter this code: ${m.code}\n\n` +
      `The link and the code expire in ${Math.round(m.validForSeconds / 86400)} days.\n`,
  };
}

/** To the owner of an address someone tried to sign up with again (the form answers as for a new one). */
export function signUpAttemptMail(m: { webUrl: string; email: string }): MailContent {
  return {
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
  return { subject: 'Profile activation status', text: 'Your profile has been accepted. You can now log in.\n' };
}

/** The moderators rejected the profile, with their reason if they gave one. */
export function profileRejectedMail(m: { reason: string | null | undefined }): MailContent {
  return {
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
    subject: 'Your password was changed',
    text:
      `The password of your account ${m.profileId} was changed${m.otherSessionsEnded ? ', and every other session was signed out' : ''}.\n\n` +
      `If this was not you, reset your password at once: ${resetRequestLink(m.webUrl)}\n`,
  };
}

// ---- added addresses ----------------------------------------------------------------------------

/** The code (and its page) that confirms an address a profile asked to add. */
export function emailConfirmationMail(m: { webUrl: string; profileId: string; token: string; code: string; validForSeconds: number }): MailContent {
  return {
    subject: 'Email confirmation',
    text:
      `The profile ${m.profileId} asked to add this address.\n\n` +
      `To confirm it, enter this code: ${m.code}\n` +
      `or open ${emailConfirmationLink(m.webUrl, m.token)} and enter it there.\n\n` +
      `The code expires in ${Math.round(m.validForSeconds / 3600)} hours. If this was not you, ignore this message.\n`,
  };
}

/** The address a profile asked to add belongs to another profile: the code merges that one into the asker. */
export function duplicateProfileMail(m: { profileId: string; email: string; duplicateId: string; code: string; validForSeconds: number }): MailContent {
  return {
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
    subject: 'Your sign-in settings changed',
    text:
      `${m.what} (account ${m.profileId}, ${m.when}).\n\n` +
      'If this was not you, change your password now and contact the support team: someone may have access to your account.\n',
  };
}
