import { describe, expect, it } from 'vitest';
import {
  activationMail,
  activationPendingMail,
  duplicateProfileMail,
  emailConfirmationMail,
  passwordChangedMail,
  passwordResetMail,
  profileAcceptedMail,
  profileRejectedMail,
  signInSettingsChangedMail,
  signUpAttemptMail,
  verificationCodeMail,
} from '../../server/mail/messages.ts';
import { deletionRequestedMail, emailChangedMail } from '../../server/mail/messages.ts';
import { newBrowserSignInMail } from '../../server/mail/messages.ts';

// Whole subjects and texts, as people receive them: a change to a word is a change to mail that
// clients and people read, and is meant to show here.
const WEB = 'https://web.example.org/account';

describe('the accounts mails say', () => {
  it('the activation link and code, and when they expire', () => {
    expect(activationMail({ webUrl: WEB, profileId: '~Ada_Lovelace1', token: 'tok_EN-1', code: '012345', validForSeconds: 7 * 86400 })).toEqual({
      kind: 'activation',
      subject: 'Signup confirmation',
      text:
        'Thank you for signing up, ~Ada_Lovelace1.\n\n' +
        'To activate your account, open this link:\nhttps://web.example.org/account/profile/activate?token=tok_EN-1\n\n' +
        'or enter this code: 012345\n\n' +
        'The link and the code expire in 7 days.\n\n' +
        'If you did not sign up, do not activate: whoever did chose the password (if you already activated, set your own at https://web.example.org/account/reset).\n',
    });
  });

  it('that someone tried to sign up with an address already taken', () => {
    expect(signUpAttemptMail({ webUrl: WEB, email: 'ada@example.org' })).toEqual({
      kind: 'sign-up-attempt',
      subject: 'Sign-up attempt with your email address',
      text:
        'Someone tried to create a new account with ada@example.org, which already belongs to an account.\n\n' +
        'If it was you, sign in, or reset your password at https://web.example.org/account/reset.\n' +
        'If it was not you, you can ignore this message.\n',
    });
  });

  it('that an activated profile waits for the moderators', () => {
    expect(activationPendingMail()).toEqual({
      kind: 'activation-pending',
      subject: 'Activation pending',
      text:
        'Thank you for completing your profile.\n\n' +
        'Your profile will be reviewed by our moderators, which usually takes a few days. You will receive an email when it is accepted, and can log in then.\n',
    });
  });

  it('the moderators’ decision, with their reason or "not given"', () => {
    expect(profileAcceptedMail()).toEqual({
      kind: 'profile-accepted', subject: 'Profile activation status', text: 'Your profile has been accepted. You can now log in.\n' });
    const rejected = (reason: string) => `Your profile was not accepted.\n\nReason: ${reason}\n\nYou can update your profile and submit it again for moderation.\n`;
    expect(profileRejectedMail({ reason: 'No affiliation' })).toEqual({
      kind: 'profile-rejected', subject: 'Profile activation status', text: rejected('No affiliation') });
    expect(profileRejectedMail({ reason: null }).text).toBe(rejected('not given'));
    expect(profileRejectedMail({ reason: undefined }).text).toBe(rejected('not given'));
    expect(profileRejectedMail({ reason: '' }).text).toBe(rejected(''));
  });

  it('the reset link and its minutes', () => {
    expect(passwordResetMail({ webUrl: WEB, profileId: '~Grace_Hopper1', token: 'tok_EN-2', validForSeconds: 3600 })).toEqual({
      kind: 'password-reset',
      subject: 'Password reset',
      text:
        'A password reset was requested for the account ~Grace_Hopper1.\n\n' +
        'To choose a new password, open this link within 60 minutes:\n' +
        'https://web.example.org/account/user/password?token=tok_EN-2\n\n' +
        'If you did not ask for this, you can ignore this message: your password stays as it is.\n',
    });
  });

  it('that the password was changed, and whether the other sessions ended', () => {
    const changed = (ended: string) => ({
      kind: 'password-changed',
      subject: 'Your password was changed',
      text: `The password of your account ~Grace_Hopper1 was changed${ended}.\n\nIf this was not you, reset your password at once: https://web.example.org/account/reset\n`,
    });
    expect(passwordChangedMail({ webUrl: WEB, profileId: '~Grace_Hopper1', otherSessionsEnded: true })).toEqual(changed(', and every other session was signed out'));
    expect(passwordChangedMail({ webUrl: WEB, profileId: '~Grace_Hopper1', otherSessionsEnded: false })).toEqual(changed(''));
  });

  it('the code that confirms an added address, and its page', () => {
    expect(emailConfirmationMail({ pagesUrl: WEB, profileId: '~Grace_Hopper1', token: 'tok_EN-3', code: '654321', validForSeconds: 48 * 3600 })).toEqual({
      kind: 'email-confirmation',
      subject: 'Email confirmation',
      text:
        'The profile ~Grace_Hopper1 asked to add this address.\n\n' +
        'To confirm it, enter this code: 654321\n' +
        'or open https://web.example.org/account/confirm?token=tok_EN-3 and enter it there.\n\n' +
        'The code expires in 48 hours. If this was not you, ignore this message.\n',
    });
  });

  it('the code that merges a duplicate profile', () => {
    expect(duplicateProfileMail({ profileId: '~Grace_Hopper1', email: 'mo@example.org', duplicateId: '~Mo_Derator1', code: '654321', validForSeconds: 48 * 3600 })).toEqual({
      kind: 'duplicate-profile',
      subject: 'Duplicate Profile Found',
      text:
        'The profile ~Grace_Hopper1 asked to add mo@example.org, which belongs to the profile ~Mo_Derator1.\n\n' +
        'If both profiles are yours, ~Mo_Derator1 can be merged into ~Grace_Hopper1 with this code: 654321\n\n' +
        'The code expires in 48 hours. If this was not you, ignore this message and nothing changes.\n',
    });
  });

  it('a token in a link escaped, so it reaches the page whole', () => {
    expect(activationMail({ webUrl: WEB, profileId: '~A1', token: 'a+b/c=&', code: '000000', validForSeconds: 0 }).text).toContain('/profile/activate?token=a%2Bb%2Fc%3D%26\n');
  });
});

describe('the multi-factor mails say', () => {
  it('the code between ** (as the real platform’s clients read it), what it is for and how long it holds', () => {
    expect(verificationCodeMail({ code: '123456', purpose: 'finish signing in to ~Ada_Lovelace1', validForSeconds: 600 })).toEqual({
      kind: 'verification-code',
      subject: 'Verification Code',
      text:
        'Your verification code is: **123456**\n\n' +
        'Enter it to finish signing in to ~Ada_Lovelace1. It is valid for 10 minutes, and a newer code replaces it.\n\n' +
        'If you did not try to sign in, someone knows your password: please change it.\n',
    });
  });

  it('what changed in how the person signs in, and what to do if it was not them', () => {
    expect(signInSettingsChangedMail({ what: 'A passkey ("Laptop") was added for signing in', profileId: '~Ada_Lovelace1', when: '2026-11-25T10:00:00.000Z' })).toEqual({
      kind: 'sign-in-settings-changed',
      subject: 'Your sign-in settings changed',
      text:
        'A passkey ("Laptop") was added for signing in (account ~Ada_Lovelace1, 2026-11-25T10:00:00.000Z).\n\n' +
        'If this was not you, change your password now and contact the support team: someone may have access to your account.\n',
    });
  });

  it('a change of the emails, to the address that had most to lose, with its undo link for seven days', () => {
    const undo = (line: string) =>
      `${line}\n\nIf this was you, there is nothing to do.\n` +
      'If it was not you, undo it within 7 days: https://web.example.org/account/emails/undo?token=tok_EN-9\n' +
      'Undoing it signs the account out everywhere; then reset your password.\n';
    const m = { pagesUrl: WEB, profileId: '~Ada_Lovelace1', email: 'ada@example.org', token: 'tok_EN-9', validForSeconds: 7 * 86400 };
    expect(emailChangedMail({ ...m, change: 'added' })).toEqual({
      kind: 'email-changed', subject: 'An email address was added to your account', text: undo('The address ada@example.org was added to your account ~Ada_Lovelace1.') });
    expect(emailChangedMail({ ...m, change: 'removed' })).toEqual({
      kind: 'email-changed',
      subject: 'This email address was removed from your account',
      text: undo('The address ada@example.org was removed from your account ~Ada_Lovelace1. Mail for the account no longer comes here, and it cannot be used to sign in or reset the password.'),
    });
    expect(emailChangedMail({ ...m, change: 'preferred' })).toEqual({
      kind: 'email-changed', subject: 'Your preferred email address was changed', text: undo('The preferred address of your account ~Ada_Lovelace1 is now ada@example.org, not this one.') });
  });

  it('the date an account will be deleted, and that signing in cancels it', () => {
    expect(deletionRequestedMail({ webUrl: WEB, profileId: '~Ada_Lovelace1', when: '2026-12-09 10:00 UTC' })).toEqual({
      kind: 'deletion-requested',
      subject: 'Your account will be deleted',
      text:
        'You asked to delete your account ~Ada_Lovelace1. It will be deleted on 2026-12-09 10:00 UTC: your names, emails, history and links are removed, and your notes keep only a placeholder signature.\n\n' +
        'To keep your account, sign in before then: signing in cancels the deletion. https://web.example.org/account/login\n\n' +
        'If you did not ask for this, sign in now and change your password.\n',
    });
  });
});

describe('the security mails say', () => {
  it('a sign-in from a new browser: when and from where, and the one "This was not me" link with its days', () => {
    expect(newBrowserSignInMail({ baseUrl: 'https://reviews.example.org', profileId: '~Ada_Lovelace1', when: '2026-11-25 10:00 UTC', from: 'Firefox 132 on Windows 10 (192.0.2.7)', token: 'tok_NM-1', validForSeconds: 7 * 86400 })).toEqual({
      kind: 'new-browser-sign-in',
      subject: 'A new sign-in to your account',
      text:
        'Your account ~Ada_Lovelace1 was signed in to from a browser it had not been used in before: Firefox 132 on Windows 10 (192.0.2.7), on 2026-11-25 10:00 UTC.\n\n' +
        'If this was you, there is nothing to do.\n\n' +
        'If it was not you, open this link within 7 days: https://reviews.example.org/account/security/not-me?token=tok_NM-1\n' +
        'It signs your account out everywhere, revokes every application you allowed, and mails you a link to choose a new password.\n',
    });
  });
});
