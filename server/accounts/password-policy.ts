/**
 * The password policy of NIST SP 800-63B §5.1.1.2 (memorized secrets), for every path that sets
 * a password: sign-up (`sign-up.ts`, the operator CLI's `user add` through `createUser` too), a
 * reset (`password-reset.ts`, the API and the page) and a change (`security.ts`). One function,
 * `checkNewPassword`, used by all of them; it throws a `ValidationError` naming the field.
 *
 * - Length: at least 8 and at most 256 characters, counted as Unicode code points (an emoji is
 *   one), as the shared schema `NewPassword` checks it for every caller (the client can check it
 *   cheaply). Nothing is truncated, and no composition rule (upper case, digits, symbols) is asked.
 * - Not a common or breached password: refused when the password, with its letter case folded,
 *   or with a trailing run of digits and symbols taken off (`dragon2024!`), is on the list of
 *   about 49,000 passwords found in breaches that `@zxcvbn-ts/language-common` ships. The list
 *   stays on the server (the client bundle never imports this file) and nothing asks the network.
 * - Not a context-specific word: the person's own email address (or its part before the `@`),
 *   name, or profile id, nor one of them with at most three characters more (`ada.lovelace1`).
 * - Not one character repeated (`aaaaaaaa`).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { AppError } from '../../shared/errors.ts';
import type { AccountsRepository } from './repository.ts';

/** The words a password must not be: the person's own. */
export interface PasswordContext {
  email?: string | null | undefined;
  /** Names as typed (a full name, or its parts) and the profile id (`~Ada_Lovelace1`). */
  words?: ReadonlyArray<string | null | undefined>;
}

/** Why a password was refused, in `details.reason`. */
export type PasswordRefusal = 'common' | 'personal' | 'repeated';

const MESSAGES: Record<PasswordRefusal, string> = {
  common: 'This password is on a list of common or breached passwords that attackers try first. Choose another one.',
  personal: 'The password must not be your email address, your name or your profile id. Choose another one.',
  repeated: 'The password must not be one character repeated. Choose another one.',
};

let common: WordList | undefined;
/**
 * The list (zxcvbn-ts's common passwords, the JSON file its package ships), read at the first
 * password set (about 50 ms), then kept. Read as data, not loaded as the package's module: a
 * module's source stays in memory with it.
 */
function commonPasswords(): WordList {
  if (common) return common;
  const require = createRequire(import.meta.url);
  const main = require.resolve('@zxcvbn-ts/language-common');
  let words: unknown[];
  try {
    words = JSON.parse(readFileSync(path.join(path.dirname(main), '..', 'src', 'passwords.json'), 'utf8')) as unknown[];
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    // A version of the package without its JSON sources: the same list through its module.
    words = (require(main) as typeof import('@zxcvbn-ts/language-common')).dictionary['passwords-common'];
  }
  common = new WordList(words.map((word) => fold(String(word))));
  return common;
}

/**
 * A fixed set of words, kept as one sorted text and the offsets of its words: the 49,000 common
 * passwords take about 0.4 MB of heap so, where a `Set` of them took 4 MB of heap for as long as the
 * process runs. A lookup is a binary search (about 16 comparisons).
 */
class WordList {
  readonly #text: string;
  /** Where each word starts in `#text`, and one past the last (each word ends where the next starts, less its separator). */
  readonly #starts: Uint32Array;

  constructor(words: string[]) {
    const sorted = [...new Set(words.filter((word) => !word.includes('\n')))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    this.#text = sorted.join('\n');
    this.#starts = new Uint32Array(sorted.length + 1);
    let at = 0;
    for (const [i, word] of sorted.entries()) {
      this.#starts[i] = at;
      at += word.length + 1;
    }
    this.#starts[sorted.length] = at;
  }

  has(word: string): boolean {
    let low = 0;
    let high = this.#starts.length - 2;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const candidate = this.#text.slice(this.#starts[middle], (this.#starts[middle + 1] ?? 0) - 1);
      if (candidate === word) return true;
      if (candidate < word) low = middle + 1;
      else high = middle - 1;
    }
    return false;
  }
}

/** Letter case folded, compatibility forms composed (as the hash sees them: `passwords.ts`). */
function fold(text: string): string {
  return text.normalize('NFKC').toLowerCase();
}

/** Only the letters and digits of a folded text: how a personal word is compared. */
function lettersAndDigits(text: string): string {
  return fold(text).replace(/[^\p{L}\p{N}]/gu, '');
}

/** Why `password` may not be used, or null when it may. */
export function passwordRefusal(password: string, context: PasswordContext = {}): PasswordRefusal | null {
  const folded = fold(password);
  const points = [...folded];
  if (points.length > 0 && points.every((c) => c === points[0])) return 'repeated';
  const list = commonPasswords();
  const stem = folded.replace(/[\p{N}\p{P}\p{S}\s]+$/u, '');
  if (list.has(folded) || (stem.length >= 4 && list.has(stem))) return 'common';
  const plain = lettersAndDigits(password);
  const email = context.email ? fold(context.email) : '';
  const personal = [email, email.split('@')[0] ?? '', ...(context.words ?? []).flatMap((word) => (word ? [word, ...word.split(/\s+/)] : []))]
    .map((word) => lettersAndDigits(word.replace(/^~/, '').replace(/\d+$/, '')))
    .filter((word) => word.length >= 3);
  if (personal.some((word) => plain.includes(word) && plain.length - word.length <= 3)) return 'personal';
  return null;
}

/**
 * Refuses a new password that the policy does not allow (see the header), as a
 * `ValidationError` at `path` (`password`, or `newPassword` on the change form) with
 * `details.reason`. The length is the schema's (`NewPassword`), checked before this runs.
 */
export function checkNewPassword(password: string, context: PasswordContext, path = 'password'): void {
  const refusal = passwordRefusal(password, context);
  if (refusal) throw new AppError('ValidationError', MESSAGES[refusal], { path, reason: refusal });
}

/** A person's own words, for a password they set when signed up already: their emails, names, usernames and profile id. */
export async function personalContext(repo: AccountsRepository, profileId: string): Promise<PasswordContext> {
  const profile = await repo.profiles.find(profileId);
  const emails = (await repo.emails.emailsOf(profileId)).map((e) => e.email);
  const names = (profile?.content.names ?? []).flatMap((n) => [n.fullname, n.first, n.middle, n.last, n.username]);
  return { email: emails[0] ?? null, words: [profileId, ...emails, ...emails.map((e) => e.split('@')[0]), ...names] };
}
