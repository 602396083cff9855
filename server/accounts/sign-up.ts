import {
  AppError,
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
import { AccountsBase, MODERATORS_GROUP, SUPER_USERS_GROUP } from './part.ts';
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

/** Sign-up: tilde usernames, new profiles (from the form or the operator CLI), activation mail. */
export class SignUpService extends AccountsBase {
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
    const fullname = user.fullname ?? [parts.first, parts.middle, parts.last].filter(Boolean).join(' ');
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
   * takes the name's next tilde number (a sign-up with a taken address reserves it), so neither
   * the answer's timing nor the next `GET /tildeusername` tells them apart; mail goes out after
   * the answer.
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
        return { id: `${base}${number}`, taken: true };
      }
      return { id: await this.#insertUser(repo, { ...input, email, state: 'Inactive' }, passwordHash), taken: false };
    });
    if (outcome.taken) {
      this.deps.mailer.post({ to: email, ...signUpAttemptMail({ webUrl: this.deps.config.webUrl, email }) });
    } else {
      this.deps.mailer.later(() => this.sendActivation(outcome.id, email));
    }
    return { id: outcome.id, status: 'ok' };
  }

  /** Mails a new activation link and code (voiding the previous ones). */
  async sendActivation(profileId: string, email: string): Promise<void> {
    const { token, code } = await this.deps.oneTime.issue(this.deps.repo, {
      kind: 'activation',
      profileId,
      email: normaliseEmail(email),
      seconds: this.deps.config.activationTokenSeconds,
      now: this.now(),
    });
    await this.deps.mailer.send({
      to: email,
      ...activationMail({ webUrl: this.deps.config.webUrl, profileId, token, code, validForSeconds: this.deps.config.activationTokenSeconds }),
    });
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
