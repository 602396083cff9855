import {
  AppError,
  AuthorConsoleConfig,
  defaultEthicsReviewForm,
  defaultRegistrationForm,
  defaultSubmissionForm,
  EntityId,
  invalidAt,
  type ErrorItem,
  type Group,
  type GroupsQuery,
  type Invitation,
  type InvitationInput,
  type Venue,
  type VenuesQuery,
} from '../../shared/index.ts';
import type { Viewer } from '../accounts/viewer.ts';
import { decisionForm, formNameProblems, reviewForm } from './official-forms.ts';
import { organisersOf, reviewersOf, type Reader, type Repos, VenuePart } from './readers.ts';

/**
 * Venues: creating one (its groups and invitations), its config, its groups and their members,
 * and its invitations. Venue groups are accounts' groups, asked for through `People`.
 */
export class VenueService extends VenuePart {
  /**
   * The venue an id lies in: the longest of its `/`-prefixes that is a venue (a group whose
   * `domain` is itself, as `POST /venues` makes it). Null when it lies in none.
   */
  async #venueOf(id: string, repos: Repos): Promise<string | null> {
    const parts = id.split('/');
    const prefixes = parts.slice(1).map((_, i) => parts.slice(0, i + 1).join('/'));
    if (prefixes.length === 0) return null;
    const venues = (await repos.people.groupsAmong(prefixes)).filter((group) => group.data.domain === group.id).map((group) => group.id);
    return venues.sort((a, b) => b.length - a.length)[0] ?? null;
  }

  /**
   * `POST /venues` (super users): the venue group with its organisers, reviewers and authors
   * groups, and the invitations the config names: submissions (the default submission form),
   * ethics review, registration, official review and decision. One transaction.
   */
  async createVenue(config: AuthorConsoleConfig, reader: Viewer): Promise<AuthorConsoleConfig> {
    if (!reader.isSuperUser) throw new AppError('ForbiddenError', 'Only super users can create venues');
    const { venueId } = config;
    const names: Array<[string, string]> = [
      ['officialReviewName', config.officialReviewName],
      ['decisionName', config.decisionName],
      ['authorName', config.authorName],
      ['submissionName', config.submissionName],
    ];
    const problems: ErrorItem[] = names
      .filter(([, name]) => !/^[A-Za-z][A-Za-z0-9_]*$/.test(name))
      .map(([key, name]) => invalidAt(key, `${key}: ${name} must be letters, digits and underscores, starting with a letter`));
    // A venue id is never a person's (`~Id`, an email) and has no empty or `-` segment (`-`
    // holds a venue's invitations), so a venue cannot be made over a person or inside another
    // venue's invitations.
    if (!/^[\w.-]+(?:\/[\w.-]+)*$/.test(venueId) || venueId.split('/').includes('-')) {
      problems.push(invalidAt('venueId', 'venueId must be segments of letters, digits, . _ - separated by /, as Conf.org/2027'));
    }
    if (['Program_Chairs', 'Reviewers', 'Ethics_Reviewers'].includes(config.authorName)) {
      problems.push(invalidAt('authorName', `authorName: ${config.authorName} is the name of another group of the venue`));
    }
    if (!config.submissionId.startsWith(`${venueId}/`)) {
      problems.push(invalidAt('submissionId', `submissionId must be inside the venue: ${venueId}/…`));
    }
    // Every id the venue makes, once, with the key of the config it comes from.
    const organisers = organisersOf(venueId);
    const reviewers = reviewersOf(venueId);
    const ethicsReviewers = `${venueId}/Ethics_Reviewers`;
    const authors = `${venueId}/${config.authorName}`;
    const invitationIds = {
      submission: config.submissionId,
      ethicsReview: `${venueId}/-/Ethics_Review`,
      registration: `${venueId}/-/Registration`,
      review: `${venueId}/-/${config.officialReviewName}`,
      decision: `${venueId}/-/${config.decisionName}`,
    };
    const made: Array<[keyof AuthorConsoleConfig, string]> = [
      ...[venueId, organisers, reviewers, ethicsReviewers, invitationIds.ethicsReview, invitationIds.registration].map((id): [keyof AuthorConsoleConfig, string] => ['venueId', id]),
      ['authorName', authors],
      ['submissionId', invitationIds.submission],
      ['officialReviewName', invitationIds.review],
      ['decisionName', invitationIds.decision],
    ];
    // Each must be one the readers take (`EntityId`), or the venue is made and can never be read
    // back; and no two the same, or one invitation's form would take the other's place.
    const madeBy = new Map<string, keyof AuthorConsoleConfig>();
    for (const [key, id] of made) {
      if (problems.some((problem) => problem.details?.path === key)) continue;
      const refused = EntityId.safeParse(id).error?.issues[0];
      const shown = `${id.slice(0, 40)}${id.length > 40 ? '…' : ''}`;
      if (refused) problems.push(invalidAt(key, `${key}: the venue's id ${shown} cannot be read back: ${refused.message}`));
      else if (madeBy.has(id)) problems.push(invalidAt(key, `${key}: the venue's id ${shown} is already the one of ${madeBy.get(id)}`));
      else madeBy.set(id, key);
    }
    problems.push(...formNameProblems(config));
    if (problems.length > 0) throw AppError.fromItems(problems);

    const now = this.now();
    await this.transaction(async (repos) => {
      const { people, venues } = repos;
      if (await people.findGroup(venueId)) {
        throw new AppError('ValidationError', `The venue ${venueId} already exists`, { path: 'venueId' });
      }
      // Nothing of another venue is taken over: none of the groups or invitations may exist yet.
      for (const group of [organisers, reviewers, ethicsReviewers, authors]) {
        if (await people.findGroup(group)) throw new AppError('ValidationError', `The group ${group} already exists`, { path: 'venueId' });
      }
      for (const id of Object.values(invitationIds)) {
        if (await venues.findInvitation(id)) throw new AppError('ValidationError', `The invitation ${id} already exists`, { path: 'venueId' });
      }
      const inner = await this.#venueOf(config.submissionId, repos);
      if (inner !== null && inner.length > venueId.length) {
        throw new AppError('ValidationError', `submissionId lies inside the venue ${inner}`, { path: 'submissionId' });
      }
      const owned = { domain: venueId, readers: ['everyone'], writers: [organisers], signatories: [organisers] };
      // No `impersonators`: being added to a venue's group gives its organisers no power over a
      // person (only a person's own `~` group names who may impersonate them).
      await people.upsertGroup(venueId, { ...owned, config }, [], now);
      await people.upsertGroup(organisers, owned, [reader.profileId], now);
      await people.upsertGroup(reviewers, owned, [], now);
      await people.upsertGroup(ethicsReviewers, owned, [], now);
      await people.upsertGroup(authors, owned, [], now);

      const invitation = (input: InvitationInput & { invitees: string[] }): Invitation => ({
        noteReaders: ['everyone'],
        noteWriters: ['${signatures}'],
        readers: ['everyone'],
        ...input,
        tauthor: reader.profileId,
        tcdate: now,
        tmdate: now,
      });
      const privateToForum = [organisers, '${signatures}', '${forum.content.authorids}'];
      for (const inv of [
        invitation({
          id: invitationIds.submission,
          domain: venueId,
          form: defaultSubmissionForm,
          invitees: ['~'],
          noteReaders: [venueId, organisers, reviewers, '${content.authorids}', '${signatures}'],
          noteWriters: [organisers, '${content.authorids}', '${signatures}'],
        }),
        invitation({
          id: invitationIds.ethicsReview,
          domain: venueId,
          form: defaultEthicsReviewForm,
          invitees: [ethicsReviewers],
          replyTo: config.submissionId,
          noteReaders: [organisers, '${signatures}'],
        }),
        invitation({
          id: invitationIds.registration,
          domain: venueId,
          form: defaultRegistrationForm,
          invitees: [reviewers],
          noteReaders: [organisers, '${signatures}'],
        }),
        invitation({
          id: invitationIds.review,
          domain: venueId,
          form: reviewForm(config),
          invitees: [reviewers],
          replyTo: config.submissionId,
          noteReaders: privateToForum,
        }),
        invitation({
          id: invitationIds.decision,
          domain: venueId,
          form: decisionForm(config),
          invitees: [organisers],
          replyTo: config.submissionId,
          noteReaders: privateToForum,
          noteWriters: [organisers],
        }),
      ]) {
        await venues.upsertInvitation(inv);
      }
    });
    return config;
  }

  /** `GET /venues/{venueId}/config`: the config with its defaults applied. */
  async venueConfig(venueId: string): Promise<AuthorConsoleConfig> {
    const group = await this.repos().people.findGroup(venueId);
    const config = group?.data.config;
    if (!config) throw new AppError('NotFoundError', `Venue Not Found: ${venueId}`);
    return AuthorConsoleConfig.parse(config);
  }

  /** `POST /groups/members`: a venue's organisers (or super users) add members to its groups. */
  async addMembers(input: { id: string; members: string[] }, reader: Viewer): Promise<{ id: string; members: string[] }> {
    const repos = this.repos();
    const group = await repos.people.findGroup(input.id);
    if (!group) throw new AppError('NotFoundError', `Group Not Found: ${input.id}`);
    const domain = typeof group.data.domain === 'string' ? group.data.domain : null;
    if (!reader.isSuperUser) {
      if (!domain) throw new AppError('ForbiddenError', `Only super users can change ${input.id}`);
      await this.readers.requireOrganiser(domain, reader, repos.people);
    }
    await this.transaction(async ({ people }) => {
      for (const member of input.members) await people.addMember(input.id, member);
    });
    return { id: input.id, members: (await repos.people.findGroup(input.id))?.members ?? [] };
  }

  // ---- invitations -----------------------------------------------------------------------------

  /**
   * `POST /invitations`: a venue's organisers (or super users) create or replace one of its
   * invitations. An invitation belongs to its venue: its id must lie in `domain` and in no venue
   * nested inside it, an existing invitation keeps its domain (replacing it needs the rights of
   * the venue it belongs to), and `replyTo` names an invitation of the same venue.
   */
  async saveInvitation(input: Omit<Invitation, 'tauthor' | 'tcdate' | 'tmdate'>, reader: Viewer): Promise<Invitation> {
    const repos = this.repos();
    const venue = await repos.people.findGroup(input.domain);
    if (!venue) throw new AppError('NotFoundError', `Group Not Found: ${input.domain}`);
    await this.readers.requireOrganiser(input.domain, reader, repos.people);
    if (venue.data.domain !== input.domain) {
      throw new AppError('ValidationError', `${input.domain} is not a venue`, { path: 'domain' });
    }
    if (!input.id.startsWith(`${input.domain}/`)) {
      throw new AppError('ValidationError', `The invitation must be inside its venue: ${input.domain}/…`, { path: 'id' });
    }
    const existing = await repos.venues.findInvitation(input.id);
    if (existing && existing.domain !== input.domain) {
      // Replacing another venue's invitation needs that venue's rights, and even then it stays there.
      await this.readers.requireOrganiser(existing.domain, reader, repos.people);
      throw new AppError('ValidationError', `The invitation ${input.id} belongs to ${existing.domain}`, { path: 'domain' });
    }
    const owner = await this.#venueOf(input.id, repos);
    if (owner !== input.domain) {
      throw new AppError('ValidationError', `The invitation must be inside its venue ${input.domain} and outside the venue ${owner}`, { path: 'id' });
    }
    if (input.replyTo) {
      const replied = await repos.venues.findInvitation(input.replyTo);
      if (!replied) throw new AppError('ValidationError', `Invitation Not Found: ${input.replyTo}`, { path: 'replyTo' });
      if (replied.domain !== input.domain) {
        throw new AppError('ValidationError', `replyTo must be an invitation of ${input.domain}`, { path: 'replyTo' });
      }
    }
    const now = this.now();
    const invitation: Invitation = { ...input, tauthor: reader.profileId, tcdate: existing?.tcdate ?? now, tmdate: now };
    await repos.venues.upsertInvitation(invitation);
    return invitation;
  }

  /** `GET /invitations?id=`: for the venue's organisers and super users, as the issue asks. */
  async invitation(id: string, reader: Viewer): Promise<Invitation> {
    const repos = this.repos();
    const invitation = await repos.venues.findInvitation(id);
    if (!invitation) throw new AppError('NotFoundError', `Invitation Not Found: ${id}`);
    await this.readers.requireOrganiser(invitation.domain, reader, repos.people);
    return invitation;
  }

  /** An invitation whose readers include the caller (super users read every one); 404 otherwise. */
  async readableInvitation(id: string, reader: Reader): Promise<Invitation> {
    const repos = this.repos();
    const invitation = await repos.venues.findInvitation(id);
    if (!invitation || !this.readers.canRead(invitation.readers, await this.readers.identities(reader, repos.people), reader)) {
      throw new AppError('NotFoundError', `Invitation Not Found: ${id}`);
    }
    return invitation;
  }

  /** An invitation by id, whoever asks: what an upload for one of its fields is checked against. */
  invitationById(id: string): Promise<Invitation | null> {
    return this.repos().venues.findInvitation(id);
  }

  /** `GET /venues`: venues by id, ids, or the invitations they own. Their configs are public. */
  async venues(query: VenuesQuery): Promise<Venue[]> {
    const repos = this.repos();
    const ids = new Set([...(query.id ? [query.id] : []), ...(query.ids ?? []), ...(await repos.venues.domainsOfInvitations(query.invitations ?? []))]);
    // A venue is a group holding an author-console config.
    const venues = (await repos.people.groupsAmong([...ids])).filter((group) => group.data.config !== undefined);
    return venues.map((group) => ({ id: group.id, config: AuthorConsoleConfig.parse(group.data.config), tcdate: group.tcdate, tmdate: group.tmdate }));
  }

  /**
   * `GET /groups`: a group by id, the groups whose id starts with `prefix`, or the groups
   * `member` belongs to directly; each only when the caller may see who is in it: super users,
   * the person the group is (their own `~Id` and email groups) and the organisers of the venue
   * the group belongs to see every member; a member of it sees the group with only the members
   * that name them (their own ids, or groups they are in: the web client asks which groups a
   * person is in). A group's `readers` field does
   * not grant more: venue groups are readable by everyone as venues, but their members (reviewers,
   * authors) are not public. A group asked for by id that the caller may not see does not exist
   * for them.
   */
  async groups(query: GroupsQuery, reader: Reader): Promise<Group[]> {
    // A guest is named by no group and organises nothing: nothing to look through.
    if (!reader) {
      if (query.id !== undefined) throw new AppError('NotFoundError', `Group Not Found: ${query.id}`);
      return [];
    }
    const repos = this.repos();
    const ids =
      query.id !== undefined
        ? [query.id]
        : query.prefix !== undefined
          ? await repos.people.groupIdsWithPrefix(query.prefix, 1000, query.after)
          : await repos.people.groupsOf([query.member ?? '']);
    // The person's own ids (not the groups they are in): the `~Id` and email groups that are them.
    const ownIds = await this.readers.ownIds(reader, repos.people);
    const identities = await this.readers.identities(reader, repos.people, ownIds);
    const own = new Set(ownIds);
    const organises = new Map<string, boolean>();
    const mayOrganise = async (domain: string) => {
      if (!organises.has(domain)) organises.set(domain, identities.has(organisersOf(domain)));
      return organises.get(domain) === true;
    };
    const groups: Group[] = [];
    for (const id of [...ids].sort()) {
      const group = await repos.people.findGroup(id);
      if (!group) continue;
      const domain = typeof group.data.domain === 'string' ? group.data.domain : undefined;
      // Everyone in it: super users, the venue's organisers, and the person the group is (their
      // own `~Id` and email groups). A member otherwise sees that they are in it, and no one else:
      // a reviewer is not told who else reviews, nor an author every venue's author.
      const whole = Boolean(reader?.isSuperUser) || own.has(group.id) || (domain !== undefined && (await mayOrganise(domain)));
      const mine = whole ? group.members : group.members.filter((m) => identities.has(m));
      if (!whole && mine.length === 0) continue;
      // Asked which groups someone else is in, a member of one of them learns nothing of it.
      if (!whole && query.member !== undefined && !identities.has(query.member)) continue;
      if (query.domain !== undefined && domain !== query.domain) continue;
      const list = (key: string) => (Array.isArray(group.data[key]) ? (group.data[key] as unknown[]).filter((v): v is string => typeof v === 'string') : undefined);
      groups.push({
        id: group.id,
        members: mine,
        ...Object.fromEntries(['readers', 'writers', 'signatures', 'signatories', 'impersonators'].flatMap((key) => (list(key) ? [[key, list(key)]] : []))),
        ...(domain !== undefined ? { domain } : {}),
      });
    }
    if (query.id !== undefined && groups.length === 0) throw new AppError('NotFoundError', `Group Not Found: ${query.id}`);
    return groups;
  }
}
