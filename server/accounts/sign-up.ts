import { z } from 'zod';
import {
  AppError,
  joinedFullname,
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
import { type AccountsRepository, normaliseEmail } from './repository.ts';
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
    const name = user.name ?? { fullname: user.fullname };
    const base = tildeBase(name, user.name ? 'name/' : '');
    const number = smallestFreeNumber(await repo.emails.usedNumbers(base));
    const id = `${base}${number}`;
    const parts = user.name ?? splitFullname(user.fullname ?? '');
    const fullname = user.fullname ?? joinedFullname(parts);
    const content: ProfileContent = {
      names: [{ first: parts.first, middle: parts.middle ?? '', last: parts.last, fullname, username: id, preferred: true }],
    };
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
   */
  async register(input: RegisterInput, origin: RequestOrigin): Promise<RegisterResult> {
    if (input.token != null || !this.deps.config.signupWithoutHumanVerification) await this.deps.verifier.verify(input.token, origin.address);
    const email = normaliseEmail(input.email);
    // The policy's list check before any counter: a refused password is a typing matter, and an
    // address that is taken gets the same refusal as a new one.
    checkNewPassword(input.password, personalWords({ ...input, email }));
    await this.deps.limits.consume('registerAccount', email);
    await this.deps.limits.consume('registerAddress', addressKey(origin.address));
    const name = input.name ?? { fullname: input.fullname };
    const passwordHash = await this.deps.hasher.hash(input.password, addressKey(origin.address));
    const outcome = await this.deps.repo.transaction(async (repo) => {
      if (await repo.emails.emailExists(email)) {
        const base = tildeBase(name, input.name ? 'name/' : '');
        const number = smallestFreeNumber(await repo.emails.usedNumbers(base));
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

/** The words of a new person's own that their password must not be (`password-policy.ts`). */
function personalWords(user: { email: string; fullname?: string | undefined; name?: NameParts | undefined }): PasswordContext {
  return { email: user.email, words: [user.fullname, user.name?.first, user.name?.middle, user.name?.last] };
}

function splitFullname(fullname: string): { first: string; middle?: string; last: string } {
  const words = fullname.trim().split(/\s+/);
  if (words.length === 1) return { first: words[0] ?? '', last: '' };
  return { first: words[0] ?? '', middle: words.slice(1, -1).join(' '), last: words.at(-1) ?? '' };
}
