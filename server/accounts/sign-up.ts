import { z } from 'zod';
import {
  AppError,
  type Name,
  type PastState,
  type ProfileContent,
  type ProfileState,
  type NameParts,
  type RegisterInput,
  type RegisterResult,
} from '../../shared/index.ts';
import { activationMail, signUpAttemptMail } from '../mail/messages.ts';
import { addressKey } from './ids.ts';
import { checkNewPassword, type PasswordContext } from './password-policy.ts';
import { MODERATORS_GROUP, SUPER_USERS_GROUP } from './roles.ts';
import { AccountsBase, type AccountsDeps } from './service-base.ts';
import type { Mail } from '../mail/mailer.ts';
import { type AccountsRepository, type ProfileRecord, normaliseEmail } from './repository.ts';
import { smallestFreeNumber, tildeBase, type NameInput } from './tilde.ts';
import type { RequestOrigin } from './viewer.ts';

export interface NewUser {
  email: string;
  password: string;
  fullname?: string | undefined;
  name?: NameParts | undefined;
  state: ProfileState;
  role?: 'superuser' | 'moderator' | undefined;
}

/** The outbox's name for an activation mail asked for (`Mailer.request`). */
export const ACTIVATION_MAIL = 'activation';

/** What an activation mail is asked with: the id as typed (canonical): an email, or a profile id. */
const ActivationMailParams = z.object({ id: z.string() });

/** Sign-up: tilde usernames, new profiles (from the form or the operator CLI), activation mail. */
export class SignUpService extends AccountsBase {
  constructor(deps: AccountsDeps) {
    super(deps);
    deps.mailer.composer(ACTIVATION_MAIL, (trx, params) => this.#composeActivation(this.deps.repo.with(trx), ActivationMailParams.parse(params)));
  }

  /** The next free `~First_Last<N>` for a name. */
  async nextUsername(name: NameInput, repo = this.deps.repo): Promise<string> {
    const base = tildeBase(name);
    return `${base}${smallestFreeNumber(await repo.emails.usedNumbers(base))}`;
  }

  /**
   * Creates a profile with its tilde id, its email, its two groups (`~Id` with the email as
   * member, and the email with `~Id` as member) and, for the operator CLI, a role. One transaction.
   */
  async createUser(user: NewUser): Promise<string> {
    checkNewPassword(user.password, personalWords(user));
    const passwordHash = await this.deps.hasher.hash(user.password);
    return this.deps.repo.transaction(async (repo) => {
      if (await repo.emails.emailExists(user.email)) {
        throw new AppError('ValidationError', `The email ${user.email} is already in use`, { path: 'email' });
      }
      return this.#insertUser(repo, user, passwordHash);
    });
  }

  async #insertUser(repo: AccountsRepository, user: NewUser, passwordHash: string): Promise<string> {
    const now = this.now();
    const { base, number } = await nextTildeNumber(repo, user);
    const id = `${base}${number}`;
    const content: ProfileContent = { names: [signUpName(user, id)] };
    const pastStates: PastState[] = [{ state: user.state, date: now, setBy: id }];
    await repo.profiles.insert({ id, state: user.state, passwordHash, content, pastStates, now });
    await repo.emails.addUsername(id, base, number);
    await repo.emails.addEmail(id, user.email, user.state !== 'Inactive', now);
    await repo.groups.upsert(id, { readers: [id], writers: [id], signatures: [id], signatories: [id] }, [], now);
    await repo.groups.linkEmailGroups(id, user.email, now);
    if (user.role) {
      const group = user.role === 'superuser' ? SUPER_USERS_GROUP : MODERATORS_GROUP;
      await repo.groups.upsert(group, { readers: [SUPER_USERS_GROUP], writers: [SUPER_USERS_GROUP] }, [], now);
      await repo.groups.addMember(group, id);
    }
    return id;
  }

  /**
   * `POST /register`. An email that is already taken gets the same answer as a new one, so the
   * form cannot be used to find out who has an account; the owner of the address is told by
   * mail. Both do the same work in the request: one password hash, and one transaction that
   * takes the name's next tilde number (a sign-up with a taken address reserves it) and writes
   * one outbox row, so neither the answer's timing nor the next `GET /tildeusername` tells them
   * apart; the activation token is made with its mail, after the answer.
   *
   * An address held by a pending registration (`isPendingRegistration`) is not taken: the
   * sign-up replaces that registration (`#replacePending`) and mails a new activation link, so
   * whoever signed up with someone else's address first cannot choose the password its owner
   * activates. The latest sign-up of a pending address wins. Not closed by this: a person who
   * never signs up but asks for the activation mail again (`POST /activatable`) and activates
   * keeps the password of whoever made the registration; the activation mail tells them not to
   * activate what they did not sign up for, or to reset the password after (docs/security.md).
   */
  async register(input: RegisterInput, origin: RequestOrigin): Promise<RegisterResult> {
    if (input.token != null || !this.deps.config.signupWithoutHumanVerification) await this.deps.verifier.verify(input.token, origin.address);
    const email = normaliseEmail(input.email);
    // The policy's list check before any counter: a refused password is a typing matter, and an
    // address that is taken gets the same refusal as a new one.
    checkNewPassword(input.password, personalWords({ ...input, email }));
    await this.deps.limits.consume('registerAccount', email);
    await this.deps.limits.consume('registerAddress', addressKey(origin.address));
    const passwordHash = await this.deps.hasher.hash(input.password, addressKey(origin.address));
    const outcome = await this.deps.repo.transaction(async (repo) => {
      const holder = await repo.profiles.findByEmail(email);
      if (holder && isPendingRegistration(holder)) {
        const username = await this.#replacePending(repo, holder, input, passwordHash);
        await this.deps.mailer.request(repo, ACTIVATION_MAIL, { id: email });
        return username;
      }
      if (holder) {
        const { base, number } = await nextTildeNumber(repo, input);
        await repo.emails.reserveUsername(base, number, this.now());
        await this.deps.mailer.queue(repo, { to: email, ...signUpAttemptMail({ webUrl: this.deps.config.webUrl, email }) });
        return `${base}${number}`;
      }
      const id = await this.#insertUser(repo, { ...input, email, state: 'Inactive' }, passwordHash);
      await this.deps.mailer.request(repo, ACTIVATION_MAIL, { id: email });
      return id;
    });
    return { id: outcome, status: 'ok' };
  }

  /**
   * A new sign-up in place of the pending registration `profile` of the same address, in the
   * sign-up's transaction: the new password hash, the new name with the next free tilde username
   * of its own (as a first sign-up takes one, and answered as a first sign-up's id is), and every
   * unused activation link voided, so only the mail this sign-up sends activates it. The profile
   * keeps its id: every group, address and token of the profile names it, and no one has seen it
   * but the holder of the address the activation mails went to.
   */
  async #replacePending(repo: AccountsRepository, profile: ProfileRecord, user: SignUpNameInput, passwordHash: string): Promise<string> {
    const now = this.now();
    const { base, number } = await nextTildeNumber(repo, user);
    const username = await repo.emails.addUsername(profile.id, base, number);
    await repo.profiles.update(profile.id, { passwordHash, content: { ...profile.content, names: [signUpName(user, username)] } }, now);
    await repo.tokens.voidAll(profile.id, 'activation', now);
    return username;
  }

  /**
   * The activation mail asked for with `params`, in the outbox's transaction: a new link and code
   * (voiding the previous ones) to the typed address, or the profile's first one. Nothing for an
   * id without a profile that waits for activation.
   */
  async #composeActivation(repo: AccountsRepository, params: z.infer<typeof ActivationMailParams>): Promise<Mail | null> {
    const profile = await repo.profiles.findByIdOrEmail(params.id);
    if (!profile || profile.state !== 'Inactive' || profile.ddate !== null) return null;
    const email = params.id.includes('@') ? params.id : (await repo.emails.emailsOf(profile.id))[0]?.email;
    if (!email) return null;
    const seconds = this.deps.config.activationTokenSeconds;
    const { token, code } = await this.deps.oneTime.issue(repo, { kind: 'activation', profileId: profile.id, email: normaliseEmail(email), seconds, now: this.now() });
    return { to: email, ...activationMail({ webUrl: this.deps.config.webUrl, profileId: profile.id, token, code, validForSeconds: seconds }) };
  }
}

/**
 * Whether `profile` is a registration still waiting for activation, which a new sign-up with its
 * address replaces (`SignUpService.register`): `Inactive` and never anything else, so never
 * activated, nor blocked, merged or rejected by anyone (a moderator's decision stays, even once
 * undone), and not deleted. What activation and the re-sent mail accept (`Inactive`, not deleted)
 * is wider only by profiles a moderator has unblocked.
 */
export function isPendingRegistration(profile: Pick<ProfileRecord, 'state' | 'ddate' | 'mergedInto' | 'pastStates'>): boolean {
  return profile.state === 'Inactive' && profile.ddate === null && profile.mergedInto === null && profile.pastStates.every((p) => p.state === 'Inactive');
}

/** What a sign-up's name is read from: `name`, or else `fullname`. */
type SignUpNameInput = Pick<NewUser, 'fullname' | 'name'>;

/** The next free tilde number of a sign-up's name (an invalid name is a 400 at its field). */
async function nextTildeNumber(repo: AccountsRepository, user: SignUpNameInput): Promise<{ base: string; number: number }> {
  const base = tildeBase(user.name ?? { fullname: user.fullname }, user.name ? 'name/' : '');
  return { base, number: smallestFreeNumber(await repo.emails.usedNumbers(base)) };
}

/** A sign-up's name as the profile stores it: the preferred one, with `username`. */
function signUpName(user: SignUpNameInput, username: string): Name {
  const parts = user.name ?? splitFullname(user.fullname ?? '');
  const fullname = user.fullname ?? [parts.first, parts.middle, parts.last].filter(Boolean).join(' ');
  return { first: parts.first, middle: parts.middle ?? '', last: parts.last, fullname, username, preferred: true };
}

/** The words of a new person's own that their password must not be (`password-policy.ts`). */
function personalWords(user: { email: string; fullname?: string | undefined; name?: NameParts | undefined }): PasswordContext {
  return { email: user.email, words: [user.fullname, user.name?.first, user.name?.middle, user.name?.last] };
}

function splitFullname(fullname: string): { first: string; middle?: string; last: string } {
  const words = fullname.trim().split(/\s+/);
  if (words.length === 1) return { first: words[0] ?? '', last: '' };
  return { first: words[0] ?? '', middle: words.slice(1, -1).join(' '), last: words.at(-1) ?? '' };
}
