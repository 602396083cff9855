import {
  AppError,
  type Profile,
  type ProfileContent,
  type ProfileSearchInput,
  type ProfileSearchQuery,
  type ProfileSearchResult,
  type ProfilesQuery,
  type ProfileState,
  type SimplifiedProfile,
} from '../../shared/index.ts';
import { AccountsBase } from './service-base.ts';
import { normaliseId } from './ids.ts';
import type { EmailRecord, EmailsAndUsernames, ProfileRecord, SearchedProfiles } from './repository.ts';
import { ACTIVE_STATES } from './session-rule.ts';
import { tildeBase, type NameInput } from './tilde.ts';
import type { Viewer } from './viewer.ts';

/** The invitation every profile is written through. */
export const PROFILE_INVITATION = '~/-/Profile';

/** Profiles: looking them up, searching, and presenting them as each caller may see them. */
export class ProfileService extends AccountsBase {

  /**
   * `GET /profiles`: the caller's own profile, or the one named by `id` (any of its usernames;
   * a merged id leads to the surviving profile) or `email`, or those named by `ids`
   * (`searchProfilesBy`), or a search by name. An id or an
   * email no profile (the caller may see) holds is an empty list, as on the real platform, whose
   * Python client turns it into its "Profile Not Found" (and `tools.get_profile` into `None`).
   */
  async profiles(query: ProfilesQuery, viewer: Viewer): Promise<{ profiles: Profile[] }> {
    if (query.first ?? query.middle ?? query.last) return { profiles: (await this.searchProfiles({ ...query }, viewer)).profiles };
    if (query.ids) return this.searchProfilesBy({ ids: query.ids }, viewer);
    const repo = this.deps.repo;
    let profile: ProfileRecord | null;
    if (query.id) profile = await repo.profiles.findByUsername(query.id);
    else if (query.email) profile = await this.#holderOf(query.email, viewer);
    else profile = await repo.profiles.find(viewer.profileId);
    if (profile?.mergedInto) profile = await repo.profiles.find(profile.mergedInto);
    if (!profile || !mayView(profile, viewer)) {
      if (query.email !== undefined || query.id !== undefined) return { profiles: [] };
      throw new AppError('NotFoundError', `Profile Not Found: ${viewer.profileId}`);
    }
    return { profiles: [await this.presentTo(profile, viewer)] };
  }

  /**
   * `GET /profiles/search`: a page of profiles (not deleted, merged or blocked) by a term, a full
   * name, name parts, a tilde id or a confirmed email, and how many match in all; for moderators
   * and super users (the web client's moderation page) `trash` adds deleted profiles and
   * `withBlocked` blocked ones. Anyone else's search leaves them out whatever it asks, as their
   * profiles are not shown to them anyway. A profile found shows others, for each of its
   * confirmed addresses, only its domain (`****@example.org`), as the real platform's does: its
   * web client's author search lists those domains to tell people of one name apart, and leaves
   * out every profile without one.
   */
  async searchProfiles(query: ProfileSearchQuery, viewer: Viewer): Promise<ProfileSearchResult> {
    const repo = this.deps.repo;
    const privileged = viewer.isSuperUser || viewer.isModerator;
    const include = { deleted: privileged && query.trash === true, blocked: privileged && query.withBlocked === true };
    const page = { offset: query.offset ?? 0, limit: query.limit ?? 100 };
    const term = query.term?.trim();
    let found: SearchedProfiles;
    if (query.email !== undefined || term?.includes('@')) {
      // An address as `GET /profiles?email=` finds it (`#holderOf`).
      const holder = await this.#holderOf(query.email ?? term ?? '', viewer);
      found = await repo.emails.searchAmong(holder ? [holder.mergedInto ?? holder.id] : [], include, page);
    } else if (query.id !== undefined) {
      const profile = await repo.profiles.findByUsername(query.id);
      found = await repo.emails.searchAmong(profile ? [profile.mergedInto ?? profile.id] : [], include, page);
    } else if (term !== undefined) {
      const base = term.startsWith('~') ? term.replace(/\d+$/, '') : `~${term.replace(/\s+/g, '_')}`;
      found = await repo.emails.searchByUsernameBase(base, 'prefix', include, page);
    } else {
      const name = query.fullname !== undefined ? { fullname: query.fullname } : { first: query.first ?? '', middle: query.middle, last: query.last ?? '' };
      const base = validBase(name);
      // A name no tilde id can be made of (an apostrophe, a digit) is nobody's, as on the real platform.
      found = base === null ? { ids: [], count: 0 } : await repo.emails.searchByUsernameBase(base, 'exact', include, page);
    }
    // A page is read in two statements (its profiles, their emails), however long it is.
    const records = await repo.profiles.findMany(found.ids);
    const profiles = found.ids.flatMap((id) => records.get(id) ?? []);
    const emails = await repo.emails.emailsOfMany(profiles.map((p) => p.id));
    return { profiles: profiles.map((profile) => presentFound(profile, viewer, emails.get(profile.id) ?? [])), count: found.count };
  }

  /**
   * `POST /profiles/search`: profiles by ids (sorted by id; unknown ones left out), or by
   * the emails they hold, each with the address it was found by in `email`.
   */
  async searchProfilesBy(input: ProfileSearchInput, viewer: Viewer): Promise<{ profiles: Profile[] }> {
    // Up to a thousand ids or addresses, read in a few statements, not one (or two) each.
    const repo = this.deps.repo;
    const seen = (profile: ProfileRecord | undefined): profile is ProfileRecord => profile !== undefined && mayView(profile, viewer);
    if (input.ids) {
      // Sorted by id, as the real platform answers.
      const ids = [...new Set(input.ids)].sort();
      const named = await repo.profiles.findManyByUsername(ids);
      const survivors = await repo.profiles.findMany([...named.values()].flatMap((p) => (p.mergedInto ? [p.mergedInto] : [])));
      const found = ids
        .map((id) => named.get(normaliseId(id)))
        .map((profile) => (profile?.mergedInto ? survivors.get(profile.mergedInto) : profile))
        .filter(seen);
      const emails = await this.#readableEmails(found, viewer);
      return { profiles: found.map((profile) => shownTo(profile, viewer, emails.get(profile.id) ?? [])) };
    }
    // An address waiting for its confirmation is not shown as anyone's, but to moderators: a
    // sign-up's address would otherwise tell that it has an account.
    const confirmedOnly = input.confirmedEmails !== undefined || !(viewer.isModerator || viewer.isSuperUser);
    const holders = await repo.emails.holdersOfEmails(input.confirmedEmails ?? input.emails ?? [], confirmedOnly);
    const records = await repo.profiles.findMany(holders.map((h) => h.profileId));
    const found = holders.flatMap(({ email, profileId }) => {
      const profile = records.get(profileId);
      return seen(profile) && !profile.mergedInto ? [{ email, profile }] : [];
    });
    const emails = await this.#readableEmails(found.map((h) => h.profile), viewer);
    return {
      profiles: found.map(({ email, profile }) => {
        const shown = shownTo(profile, viewer, emails.get(profile.id) ?? []);
        // The caller named the address: the answer says which profile holds it, and nothing more.
        return { ...shown, email, ...(confirmedOnly ? { confirmedEmails: [...new Set([...(shown.confirmedEmails ?? []), email])] } : {}) };
      }),
    };
  }

  /** The emails of those of `profiles` whose emails `viewer` may see (`mayReadEmails`), in one statement. */
  #readableEmails(profiles: readonly ProfileRecord[], viewer: Viewer): Promise<Map<string, EmailRecord[]>> {
    return this.deps.repo.emails.emailsOfMany(profiles.filter((p) => mayReadEmails(p, viewer)).map((p) => p.id));
  }

  /**
   * The profile holding an address: any address for moderators and super users; a confirmed
   * one (or the caller's own) for everyone else, so a sign-up not yet activated stays unseen.
   */
  async #holderOf(email: string, viewer: Viewer): Promise<ProfileRecord | null> {
    const profiles = this.deps.repo.profiles;
    const profile = await profiles.findByEmail(email);
    if (!profile || viewer.isModerator || viewer.isSuperUser || profile.id === viewer.profileId) return profile;
    return profiles.findByEmail(email, { confirmedOnly: true });
  }

  /** A profile as `GET /profiles` shows it to `viewer` (also the answer to editing it, `profile-editor.ts`). */
  presentTo(profile: ProfileRecord, viewer: Viewer): Promise<Profile> {
    return this.present(profile, mayReadEmails(profile, viewer), profile.id === viewer.profileId);
  }

  /** A profile as the API shows it; emails only to its owner and to moderators. */
  async present(profile: ProfileRecord, showEmails: boolean, isOwner: boolean, repo = this.deps.repo): Promise<Profile> {
    return shownProfile(profile, showEmails, isOwner, showEmails ? await repo.emails.emailsOf(profile.id) : []);
  }

  /** A profile's simplified view; `known`: its emails and usernames, when they were read with it. */
  async simplify(profile: ProfileRecord, repo = this.deps.repo, known?: EmailsAndUsernames): Promise<SimplifiedProfile> {
    const { emails, usernames } = known ?? (await repo.emails.emailsAndUsernamesOf(profile.id));
    const name = profile.content.names?.find((n) => n.preferred) ?? profile.content.names?.[0];
    const preferred = preferredEmail(profile, emails);
    return {
      id: profile.id,
      first: name?.first ?? null,
      middle: name?.middle ?? null,
      last: name?.last ?? null,
      fullname: name?.fullname || profile.id,
      emails: emails.map((e) => e.email),
      ...(preferred ? { preferredEmail: preferred } : {}),
      usernames,
      preferredId: name?.username ?? profile.id,
      state: profile.state,
      ...(profile.termsTimestamp !== null ? { termsTimestamp: profile.termsTimestamp } : {}),
      ...(profile.dobTimestamp !== null ? { dobTimestamp: profile.dobTimestamp } : {}),
      tokenVersion: profile.tokenVersion,
    };
  }

  /** A profile as its simplified view, by id. */
  async simplifiedById(profileId: string): Promise<SimplifiedProfile> {
    const profile = await this.deps.repo.profiles.find(profileId);
    if (!profile) throw new AppError('NotFoundError', `Profile Not Found: ${profileId}`);
    return this.simplify(profile);
  }

  /** Every profile, for the operator CLI. */
  async listUsers(): Promise<Array<{ id: string; state: ProfileState; emails: string[] }>> {
    const repo = this.deps.repo;
    const profiles = await repo.profiles.list();
    const emails = await repo.emails.emailsOfMany(profiles.map((p) => p.id));
    return profiles.map((p) => ({ id: p.id, state: p.state, emails: (emails.get(p.id) ?? []).map((e) => e.email) }));
  }
}

/**
 * A profile as the API shows it, given its emails (`emailsOf`) when `showEmails` (to its owner,
 * moderators and super users: `mayReadEmails`); whoever else looks sees none.
 */
function shownProfile(profile: ProfileRecord, showEmails: boolean, isOwner: boolean, emails: readonly EmailRecord[]): Profile {
  const preferred = showEmails ? preferredEmail(profile, emails) : undefined;
  const content: ProfileContent = { ...profile.content };
  // The platform's clients read these as lists whether or not any was entered (openreview-web's
  // profile editor, on the activation page too, maps `relations` at once): a profile that has
  // none shows empty ones.
  content.relations ??= [];
  content.expertise ??= [];
  if (showEmails) {
    content.emails = emails.map((e) => e.email);
    content.emailsConfirmed = emails.filter((e) => e.confirmed).map((e) => e.email);
    if (preferred) content.preferredEmail = preferred;
  } else {
    // Whoever may not see the profile's emails sees none of them: not the preferred one stored
    // in its content, nor those of the people it names as relations. The lists stay, empty:
    // the real platform's clients read them on every profile (openreview-web's author search
    // calls `content.emails.find` on each author of a submission it edits).
    delete content.preferredEmail;
    content.emails = [];
    content.emailsConfirmed = [];
    // Nor the date of birth: it is the person's own, for the age rules, not for the public.
    delete content.dob;
    delete content.yearOfBirth;
    delete content.isMinor;
    delete content.isOver18;
    if (content.relations) content.relations = content.relations.map(({ email: _email, ...relation }) => relation);
  }
  return {
    id: profile.id,
    active: ACTIVE_STATES.has(profile.state),
    password: profile.passwordHash !== null,
    invitation: PROFILE_INVITATION,
    ...(preferred ? { email: preferred } : {}),
    ...(showEmails ? { confirmedEmails: content.emailsConfirmed ?? [] } : {}),
    content,
    readers: ['everyone'],
    writers: [profile.id],
    signatures: [profile.id],
    state: profile.state,
    pastStates: profile.pastStates,
    ddate: profile.ddate,
    tcdate: profile.tcdate,
    tmdate: profile.tmdate,
    tauthor: profile.id,
    tokenVersion: profile.tokenVersion,
    ...(profile.termsTimestamp !== null ? { termsTimestamp: profile.termsTimestamp } : {}),
    ...(profile.dobTimestamp !== null ? { dobTimestamp: profile.dobTimestamp } : {}),
    ...(isOwner && profile.lastLogin !== null ? { lastLogIn: profile.lastLogin } : {}),
  };
}

/** The tilde base of a name, or null when no tilde id can be made of it. */
function validBase(name: NameInput): string | null {
  try {
    return tildeBase(name);
  } catch (error) {
    if (error instanceof AppError && error.name === 'ValidationError') return null;
    throw error;
  }
}

/** Whether `viewer` may see `profile` at all: a deleted one only moderators and super users do. */
function mayView(profile: ProfileRecord, viewer: Viewer): boolean {
  return profile.ddate === null || viewer.isSuperUser || viewer.isModerator;
}

/** Whether `viewer` sees the emails of `profile`: its owner, moderators and super users do. */
function mayReadEmails(profile: ProfileRecord, viewer: Viewer): boolean {
  return profile.id === viewer.profileId || viewer.isModerator || viewer.isSuperUser;
}

/** A profile as `viewer` may see it (`presentTo`), given all of its emails. */
function shownTo(profile: ProfileRecord, viewer: Viewer, emails: readonly EmailRecord[]): Profile {
  return shownProfile(profile, mayReadEmails(profile, viewer), profile.id === viewer.profileId, emails);
}

/**
 * A profile found by a search, given all of its emails, as `viewer` may see it: to whoever may
 * not see its emails, the domains of its confirmed ones (see `searchProfiles`).
 */
function presentFound(profile: ProfileRecord, viewer: Viewer, emails: readonly EmailRecord[]): Profile {
  const shown = shownTo(profile, viewer, emails);
  if (mayReadEmails(profile, viewer)) return shown;
  const confirmed = emails.filter((e) => e.confirmed);
  const masks = [...new Set(confirmed.map((e) => maskOf(e.email)))];
  const preferred = preferredEmail(profile, confirmed);
  const content = { ...shown.content, emails: masks, emailsConfirmed: masks };
  // A preferred address stored in the content but not (or no longer) confirmed is not shown.
  return { ...shown, content: preferred && confirmed.some((e) => e.email === preferred) ? { ...content, preferredEmail: maskOf(preferred) } : content };
}

/** An address as others see it in a search: its domain only. */
function maskOf(email: string): string {
  return `****@${email.slice(email.lastIndexOf('@') + 1)}`;
}

export function preferredEmail(profile: ProfileRecord, emails: ReadonlyArray<{ email: string; confirmed: boolean }>): string | undefined {
  return profile.content.preferredEmail ?? emails.find((e) => e.confirmed)?.email ?? emails[0]?.email;
}
