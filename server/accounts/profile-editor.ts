/**
 * Editing a profile: `accounts.updateProfile`, which `POST /profiles` (the real platform's
 * `post_profile`), the typed client and the page `/account/profile` all call. The input's shape
 * and each field's rule are `EditableProfileContent` (`shared/schemas/profile-edit.ts`); what
 * needs the database is here, each rule a named check:
 *
 * - `targetOf`: a person edits their own profile; a super user any (named by `id` or `referent`).
 * - `namesOf`: a name that has a username keeps it, and only the profile's own usernames may be
 *   named; a name still spells its username; the name of the profile id stays; a new name gets
 *   its tilde id as activation gives one (`tilde.ts`: a username the profile already holds for
 *   the same spelling, else the next free number); one name is preferred.
 * - `birthOf`: the date of birth (`yearOfBirth`, `dob`, `isMinor`, `isOver18`) may be given when
 *   there is none, and corrected by its owner within `DOB_CORRECTION_DAYS` of `dobTimestamp`
 *   (when the date now in effect was first supplied); after that only a super user changes it.
 *   Any change moves `dobTimestamp` to now, as the spec defines it.
 * - `checkEmailEdit`: the emails are the email table's, changed only by the emails page's rules
 *   (`email-changes.ts`): the person's own signed-in session, with its refresh cookie, never while
 *   impersonated (checked once, before anything is written: `mayChange`); the preferred and the
 *   last confirmed address stay, and every change is told with its undo link (checked and made in
 *   the save's transaction: `setPreferredIn`, `removeIn`). The web client's profile editor posts
 *   the addresses it lists (`content.emails`, without one its owner removed) and the one marked
 *   preferred (`content.preferredEmail`), so: a `preferredEmail` that is another of the profile's
 *   addresses is made preferred (`setPreferredIn`), and each unconfirmed address of the profile's
 *   missing from a given `emails` is removed (`removeIn`), as the web client's Emails section
 *   removes only rows waiting for their code. A confirmed address missing from the list is kept: a
 *   list read before it was confirmed (in another tab, by a script) does not remove it, and
 *   confirmed addresses are removed on the emails page, whose notice and undo link the removal
 *   needs (one confirmed while the save runs is kept too). An address the profile does not hold is
 *   ignored (adding one goes through its confirmation code), as is `emailsConfirmed`; a left-out
 *   `emails` or `preferredEmail` changes nothing. A refusal is the procedure's own (403, 400), its
 *   `details.path` `content/preferredEmail` or `content/emails`. Only the person changes their
 *   emails: a super user's edit of another's profile that would change them is refused (403).
 *
 * The email changes' rules are checked before anything is written (`checkEmailEdit`: the
 * person's own session with its refresh cookie, not impersonated; a confirmed preferred
 * address), then one transaction replaces the content (moving `tmdate`, audited as
 * `profile:update` with the names of the fields that changed, never their values) and makes the
 * email changes by their procedures' rules (`setPreferredIn`, `removeIn`). One that another
 * request makes fail meanwhile (the address removed) is answered with its refusal, and nothing
 * of the save is written (docs/accounts.md, Emails).
 */
import { AppError, type EditableProfileContent, type Name, type Profile, type ProfileContent, type ProfileEditorOptions } from '../../shared/index.ts';
import { POSITIONS } from '../../db/seeds/institutions.ts';
import { AccountsPart, type AccountsCore } from './core.ts';
import { unconfirmedPreferred } from './email-changes.ts';
import { preferredEmail } from './profiles.ts';
import { normaliseEmail, type AccountsRepository, type ProfileRecord } from './repository.ts';
import type { AccountsDeps } from './service-base.ts';
import { deviceDetails } from './sessions.ts';
import { splitUsername, tildeBase, usernameForName } from './tilde.ts';
import type { RequestOrigin, Viewer } from './viewer.ts';

/** How long after a date of birth is first supplied its owner may still correct it. */
export const DOB_CORRECTION_DAYS = 30;
const DAY_MS = 24 * 60 * 60 * 1000;

/** The fields that are the date of birth, governed together by `dobTimestamp`. */
const BIRTH_FIELDS = ['yearOfBirth', 'dob', 'isMinor', 'isOver18'] as const;

/** Whether a profile's content gives a date of birth (any of its fields). */
export function hasBirthDate(content: ProfileContent): boolean {
  return BIRTH_FIELDS.some((key) => content[key] !== undefined);
}
/** The fields the content does not take from the input: the emails' own procedures own them (`checkEmailEdit`). */
const EMAIL_FIELDS = ['emails', 'emailsConfirmed', 'preferredEmail'] as const;

type Edited = Omit<EditableProfileContent, (typeof EMAIL_FIELDS)[number]>;

/**
 * What an edit asks of the person's own emails: `EmailChangeService` (`email-changes.ts`), whose
 * rules, audit lines and mailed undo links are the ones the emails page gets.
 */
export interface OwnEmailChanges {
  /** Refuses (403) a caller who may not change their emails: impersonated, or without the session's refresh cookie. */
  mayChange(viewer: Viewer, refreshToken: string | undefined): Promise<unknown>;
  /** Makes a confirmed address of the profile's preferred, in the save's transaction. */
  setPreferredIn(repo: AccountsRepository, profileId: string, email: string, origin: RequestOrigin, now: number): Promise<void>;
  /** Removes an address of the profile's, in the save's transaction. */
  removeIn(repo: AccountsRepository, profileId: string, email: string, origin: RequestOrigin, now: number, opts: { onlyUnconfirmed: boolean }): Promise<void>;
}

/** What a post asks of the profile's emails (`checkEmailEdit`): an address to make preferred, and the unconfirmed ones to remove. */
interface EmailEdit {
  preferred: string | undefined;
  removed: string[];
}

export class ProfileEditor extends AccountsPart {
  readonly #emails: OwnEmailChanges;

  constructor(deps: AccountsDeps, core: AccountsCore, emails: OwnEmailChanges) {
    super(deps, core);
    this.#emails = emails;
  }

  /** `accounts.profileEditorOptions`: the positions and institutions the page offers. */
  async options(): Promise<ProfileEditorOptions> {
    return { positions: [...POSITIONS], institutions: await this.deps.repo.settings.institutions() };
  }

  /**
   * `accounts.updateProfile`: checks what the post asks of the emails (`checkEmailEdit`), replaces
   * the profile's editable content (names, history, links, relations, expertise, pronouns, gender,
   * date of birth) and changes the emails by their rules, in one transaction, and answers the
   * profile as `GET /profiles` shows it to the caller.
   * `refreshToken`: the request's refresh cookie, which changing emails needs.
   */
  async update(
    input: { id?: string | undefined; referent?: string | undefined; content: EditableProfileContent },
    viewer: Viewer,
    origin: RequestOrigin,
    refreshToken?: string | undefined,
  ): Promise<Profile> {
    const target = await this.#targetOf(this.deps.repo, input.id ?? input.referent, viewer);
    const edit = await this.#checkEmailEdit(target, input.content, viewer, refreshToken);
    const now = this.now();
    await this.deps.repo.transaction(async (repo) => {
      const profile = (await repo.profiles.find(target.id)) ?? target;
      const { emails: _e, emailsConfirmed: _c, preferredEmail: _p, ...given } = input.content;
      const names = await this.#namesOf(repo, profile, given.names);
      const birth = this.#birthOf(profile, given, viewer, now);
      const content = stored({ ...given, names }, profile.content);
      const changed = changedFields(profile.content, content);
      await repo.profiles.update(profile.id, { content, ...(birth.changed ? { dobTimestamp: birth.dobTimestamp } : {}) }, now);
      await repo.settings.audit(
        {
          // An impersonation's edit is its impersonator's act (their profile id; their login email if none).
          actor: viewer.impersonator ? (viewer.impersonator.profile?.id ?? viewer.impersonator.id) : viewer.profileId,
          action: 'profile:update',
          target: profile.id,
          details: { fields: changed, ...(viewer.impersonator ? { impersonating: viewer.profileId } : {}), ...deviceDetails(origin) },
        },
        now,
      );
      // The emails last, by their own rules, in the same transaction: a refusal (the address
      // removed meanwhile by another request) leaves the content as it was too.
      if (edit.preferred !== undefined) await refusedAt('content/preferredEmail', this.#emails.setPreferredIn(repo, profile.id, edit.preferred, origin, now));
      // Only addresses still unconfirmed: one confirmed meanwhile (its code entered in another tab) is kept.
      for (const email of edit.removed) await refusedAt('content/emails', this.#emails.removeIn(repo, profile.id, email, origin, now, { onlyUnconfirmed: true }));
    });
    return this.core.profiles.presentTo((await this.deps.repo.profiles.find(target.id)) as ProfileRecord, viewer);
  }

  /**
   * Who may edit which profile: anyone their own; a super user any, by any of its usernames (a
   * merged id leads to the surviving profile, as `GET /profiles` does). Naming a profile that is
   * not one's own is refused alike whether it exists or not.
   */
  async #targetOf(repo: AccountsRepository, id: string | undefined, viewer: Viewer): Promise<ProfileRecord> {
    let profile = id === undefined ? await repo.profiles.find(viewer.profileId) : await repo.profiles.findByUsername(id);
    if (profile?.mergedInto) profile = await repo.profiles.find(profile.mergedInto);
    if (!viewer.isSuperUser && profile?.id !== viewer.profileId) {
      throw new AppError('ForbiddenError', 'You can only edit your own profile', { path: 'id' });
    }
    if (!profile) throw new AppError('NotFoundError', `Profile Not Found: ${id ?? viewer.profileId}`, { path: 'id' });
    return profile;
  }

  /**
   * checkEmailEdit: what the post asks of the emails (see the header), refused now, before
   * anything is written, for whatever the email procedures would refuse it for: another's
   * profile, an impersonation, a call without the session's refresh cookie (403), a preferred
   * address not confirmed yet (400). The address rules are checked again in the transaction.
   */
  async #checkEmailEdit(profile: ProfileRecord, content: EditableProfileContent, viewer: Viewer, refreshToken: string | undefined): Promise<EmailEdit> {
    const held = await this.deps.repo.emails.emailsOf(profile.id);
    const edit = emailEditOf(content, held, preferredEmail(profile, held));
    if (edit.preferred === undefined && edit.removed.length === 0) return edit;
    const path = edit.preferred !== undefined ? 'content/preferredEmail' : 'content/emails';
    if (profile.id !== viewer.profileId) {
      throw new AppError('ForbiddenError', 'Only the person changes their emails, on their own emails page or profile', { path });
    }
    await refusedAt(path, this.#emails.mayChange(viewer, refreshToken));
    if (edit.preferred !== undefined && !held.some((e) => e.email === edit.preferred && e.confirmed)) {
      throw unconfirmedPreferred(edit.preferred, 'content/preferredEmail');
    }
    return edit;
  }

  /** The names as stored: see the header (`namesOf`). */
  async #namesOf(repo: AccountsRepository, profile: ProfileRecord, given: EditableProfileContent['names']): Promise<Name[]> {
    const owned = new Set(await repo.emails.usernamesOf(profile.id));
    const before = new Map((profile.content.names ?? []).filter((n) => n.username).map((n) => [n.username as string, n]));
    const names: Name[] = [];
    for (const [i, name] of given.entries()) {
      const at = `content/names/${i}/`;
      if (name.username) {
        if (!owned.has(name.username)) {
          throw new AppError('ValidationError', `${name.username} is not one of this profile’s ids: leave the id out of a new name, and it gets one`, { path: `${at}username` });
        }
        if (!spells(name, name.username, before.get(name.username))) {
          throw new AppError('ValidationError', `A name keeps the spelling of its profile id ${name.username}: add the new spelling as another name instead`, { path: `${at}first` });
        }
        names.push(name);
        continue;
      }
      const base = tildeBase(name, at);
      // A spelling given twice in one post would take a new id for each copy, ids that are never
      // given back: one post could take every id of a name.
      const twice = given.some((other, j) => j !== i && (other.username ? splitUsername(other.username)?.base === base : j < i && tildeBase(other) === base));
      if (twice) throw new AppError('ValidationError', 'This name is already in the list: give each name once', { path: `${at}first` });
      const taken = new Set([...names.map((n) => n.username), ...given.map((n) => n.username)]);
      names.push({ ...name, username: await usernameForName(repo.emails, profile.id, owned, base, taken) });
    }
    if (!names.some((n) => n.username === profile.id) && owned.has(profile.id)) {
      throw new AppError('ValidationError', `The name of your profile id ${profile.id} cannot be removed`, { path: 'content/names' });
    }
    const preferred = names.findIndex((n) => n.preferred);
    return names.map((n, i) => {
      const { preferred: _p, ...rest } = n;
      return i === (preferred === -1 ? 0 : preferred) ? { ...rest, preferred: true } : rest;
    });
  }

  /**
   * The date of birth: see the header (`birthOf`). Answers whether it changed and its new
   * `dobTimestamp`; refuses a change its owner may no longer make, naming the first field changed.
   */
  #birthOf(profile: ProfileRecord, given: Edited, viewer: Viewer, now: number): { changed: boolean; dobTimestamp: number | null } {
    const changedField = BIRTH_FIELDS.find((key) => profile.content[key] !== given[key]);
    if (changedField === undefined) return { changed: false, dobTimestamp: profile.dobTimestamp };
    const thisYear = new Date(now).getUTCFullYear();
    if (given.yearOfBirth !== undefined && given.yearOfBirth > thisYear) {
      throw new AppError('ValidationError', 'Enter a year of birth that has come', { path: 'content/yearOfBirth' });
    }
    if (given.dob !== undefined && given.dob > now) throw new AppError('ValidationError', 'Enter a date of birth that has come', { path: 'content/dob' });
    const hadBirth = hasBirthDate(profile.content);
    // A date stored before activation kept `dobTimestamp` counts from the profile's creation.
    const since = profile.dobTimestamp ?? profile.tcdate;
    if (hadBirth && !viewer.isSuperUser && now - since > DOB_CORRECTION_DAYS * DAY_MS) {
      throw new AppError('ValidationError', `Your date of birth can no longer be changed: it was given more than ${DOB_CORRECTION_DAYS} days ago. Ask the service’s administrators to correct it`, {
        path: `content/${changedField}`,
        reason: 'dob-window-closed',
      });
    }
    const hasBirth = hasBirthDate(given);
    return { changed: true, dobTimestamp: hasBirth ? now : null };
  }
}

/** Whether a name with a username still spells it: as stored, or with the same tilde base. */
function spells(name: Name, username: string, stored: Name | undefined): boolean {
  const same = (a: string | null | undefined, b: string | null | undefined) => (a ?? '') === (b ?? '');
  if (stored && same(name.first, stored.first) && same(name.middle, stored.middle) && same(name.last, stored.last) && same(name.fullname, stored.fullname)) return true;
  try {
    return tildeBase(name) === splitUsername(username)?.base;
  } catch {
    return false;
  }
}

/**
 * What a post asks of the profile's emails (`held`, `before` the preferred one): another held
 * address as `preferredEmail`, and the held addresses a given `emails` leaves out. Addresses the
 * profile does not hold are no part of it; compared as stored (`normaliseEmail`).
 */
function emailEditOf(content: EditableProfileContent, held: ReadonlyArray<{ email: string; confirmed: boolean }>, before: string | undefined): EmailEdit {
  const holds = new Set(held.map((e) => e.email));
  const asked = content.preferredEmail ? normaliseEmail(content.preferredEmail) : undefined;
  const preferred = asked !== undefined && asked !== before && holds.has(asked) ? asked : undefined;
  const listed = content.emails === undefined ? null : new Set(content.emails.map(normaliseEmail));
  // Unconfirmed ones only (see the header): a confirmed address is removed on the emails page.
  const removed = listed === null ? [] : held.filter((e) => !e.confirmed && !listed.has(e.email)).map((e) => e.email);
  return { preferred, removed };
}

/** The email procedure's refusal, told as the field of the post that asked for the change. */
async function refusedAt<T>(path: string, change: Promise<T>): Promise<T> {
  try {
    return await change;
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    throw new AppError(error.name, error.message, { ...error.details, path }, error.errors);
  }
}

/**
 * The content to store: the edit's fields (blank ones left out), the names as `namesOf` made
 * them, and the stored `preferredEmail`, which only the emails' own procedures change (an edit
 * through them, after the content: `update`).
 */
function stored(edit: Omit<Edited, 'names'> & { names: Name[] }, before: ProfileContent): ProfileContent {
  const content: ProfileContent = {};
  for (const [key, value] of Object.entries(edit) as Array<[keyof ProfileContent, unknown]>) {
    if (value === undefined || value === null || (Array.isArray(value) && value.length === 0)) continue;
    (content as Record<string, unknown>)[key] = value;
  }
  if (before.preferredEmail !== undefined) content.preferredEmail = before.preferredEmail;
  return content;
}

/** The content's keys whose value differs, sorted: what the audit line says changed. */
function changedFields(before: ProfileContent, after: ProfileContent): string[] {
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...keys].filter((key) => JSON.stringify(before[key as keyof ProfileContent]) !== JSON.stringify(after[key as keyof ProfileContent])).sort();
}

