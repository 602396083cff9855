import {
  AppError,
  AuthorConsoleConfig,
  defaultEthicsReviewForm,
  defaultRegistrationForm,
  defaultSubmissionForm,
  validateContent,
  type AuthorConsole,
  type ErrorItem,
  type FormDefinition,
  type Invitation,
  type InvitationInput,
  type Note,
  type NoteEdit,
  type NoteEditsQuery,
  type NotesQuery,
  type PostedNoteEdit,
  type PostNoteEditInput,
  type PostNoteInput,
  type RatingSummary,
  type Group,
  type GroupsQuery,
  type Venue,
  type VenuesQuery,
  contentFilters,
} from '../../shared/index.ts';
import type { Viewer } from '../accounts/viewer.ts';
import type { People, UploadsView } from './collaborators.ts';
import { authorIdsOf, type VenueRepository } from './repository.ts';

/** The group of a venue's organisers: they manage its invitations and groups. */
export const organisersOf = (venueId: string) => `${venueId}/Program_Chairs`;
export const reviewersOf = (venueId: string) => `${venueId}/Reviewers`;

/** Who is asking: a signed-in caller, or a guest (null). */
type Reader = Viewer | null;

interface Repos {
  people: People;
  venues: VenueRepository;
}

/** The field of a decision note that holds the decision: `decisionName`, lower-cased. */
export const decisionField = (config: Pick<AuthorConsoleConfig, 'decisionName'>) => config.decisionName.toLowerCase();

/** A rating entry as configured: one displayed name and the fields to try, in order. */
export function ratingFields(reviewRatingName: AuthorConsoleConfig['reviewRatingName']): Array<{ display: string; fields: string[] }> {
  const entries = typeof reviewRatingName === 'string' ? [reviewRatingName] : reviewRatingName;
  return entries.flatMap((entry) =>
    typeof entry === 'string' ? [{ display: entry, fields: [entry] }] : Object.entries(entry).map(([display, fields]) => ({ display, fields })),
  );
}

/** `8: accept` counts as 8; a number is itself; anything else does not count. */
export function ratingValue(value: unknown): number | null {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value !== 'string') return null;
  const match = /^\s*(-?\d+(?:\.\d+)?)/.exec(value);
  return match?.[1] ? Number(match[1]) : null;
}

export function summarise(values: number[]): RatingSummary {
  if (values.length === 0) return { min: 'N/A', max: 'N/A', average: 'N/A' };
  const sum = values.reduce((a, b) => a + b, 0);
  return { min: Math.min(...values), max: Math.max(...values), average: (sum / values.length).toFixed(2) };
}

const fieldValue = (note: Note, field: string): unknown => (note.content[field] as { value?: unknown } | undefined)?.value;

/**
 * Venues, their invitations and notes, and the author console. Readers are enforced on every
 * read: a guest sees only notes readable by `everyone`.
 */
export class VenueService {
  readonly #repo: VenueRepository;
  readonly #people: People;
  readonly #uploads: UploadsView;
  readonly #now: () => number;

  constructor(deps: { repo: VenueRepository; people: People; uploads: UploadsView; now?: () => number }) {
    this.#repo = deps.repo;
    this.#people = deps.people;
    this.#uploads = deps.uploads;
    this.#now = deps.now ?? Date.now;
  }

  #repos(): Repos {
    return { people: this.#people, venues: this.#repo };
  }

  #transaction<T>(work: (repos: Repos) => Promise<T>): Promise<T> {
    return this.#repo.transaction((venues, trx) => work({ people: this.#people.within(trx), venues }));
  }

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
   * Every id the reader answers to: `everyone`; and for a signed-in caller `~` (any signed-in
   * user), their profile's usernames and emails, the groups those belong to, and the groups
   * those groups belong to.
   */
  async identities(reader: Reader, repos = this.#repos()): Promise<Set<string>> {
    const ids = new Set(['everyone']);
    if (!reader) return ids;
    ids.add('~');
    const own = [...(await repos.people.usernamesOf(reader.profileId)), reader.profileId, ...(await repos.people.confirmedEmailsOf(reader.profileId))];
    const groups = await repos.people.groupsOf(own);
    const outer = await repos.people.groupsOf(groups);
    for (const id of [...own, ...groups, ...outer]) ids.add(id);
    return ids;
  }

  #canRead(readers: string[], ids: Set<string>, reader: Reader): boolean {
    return Boolean(reader?.isSuperUser) || readers.some((r) => ids.has(r));
  }

  async #requireOrganiser(venueId: string, reader: Viewer, repos: Repos): Promise<void> {
    if (reader.isSuperUser) return;
    if (!(await this.identities(reader, repos)).has(organisersOf(venueId))) {
      throw new AppError('ForbiddenError', `Only the organisers of ${venueId} can do this`);
    }
  }

  // ---- venues ----------------------------------------------------------------------------------

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
      .map(([key, name]) => ({
        status: 400,
        name: 'ValidationError',
        message: `${key}: ${name} must be letters, digits and underscores, starting with a letter`,
        details: { path: key },
      }));
    // A venue id is never a person's (`~Id`, an email) and has no empty or `-` segment (`-`
    // holds a venue's invitations), so a venue cannot be made over a person or inside another
    // venue's invitations.
    if (!/^[\w.-]+(?:\/[\w.-]+)*$/.test(venueId) || venueId.split('/').includes('-')) {
      problems.push({
        status: 400,
        name: 'ValidationError',
        message: 'venueId must be segments of letters, digits, . _ - separated by /, as Conf.org/2027',
        details: { path: 'venueId' },
      });
    }
    if (['Program_Chairs', 'Reviewers', 'Ethics_Reviewers'].includes(config.authorName)) {
      problems.push({ status: 400, name: 'ValidationError', message: `authorName: ${config.authorName} is the name of another group of the venue`, details: { path: 'authorName' } });
    }
    if (!config.submissionId.startsWith(`${venueId}/`)) {
      problems.push({ status: 400, name: 'ValidationError', message: `submissionId must be inside the venue: ${venueId}/…`, details: { path: 'submissionId' } });
    }
    if (problems.length > 0) throw AppError.fromItems(problems);

    const now = this.#now();
    await this.#transaction(async (repos) => {
      const { people, venues } = repos;
      if (await people.findGroup(venueId)) {
        throw new AppError('ValidationError', `The venue ${venueId} already exists`, { path: 'venueId' });
      }
      const organisers = organisersOf(venueId);
      const reviewers = reviewersOf(venueId);
      const authors = `${venueId}/${config.authorName}`;
      // Nothing of another venue is taken over: none of the groups or invitations may exist yet.
      for (const group of [organisers, reviewers, `${venueId}/Ethics_Reviewers`, authors]) {
        if (await people.findGroup(group)) throw new AppError('ValidationError', `The group ${group} already exists`, { path: 'venueId' });
      }
      const invitationIds = [config.submissionId, ...['Ethics_Review', 'Registration', config.officialReviewName, config.decisionName].map((n) => `${venueId}/-/${n}`)];
      for (const id of invitationIds) {
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
      await people.upsertGroup(`${venueId}/Ethics_Reviewers`, owned, [], now);
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
          id: config.submissionId,
          domain: venueId,
          form: defaultSubmissionForm,
          invitees: ['~'],
          noteReaders: [venueId, organisers, reviewers, '${content.authorids}', '${signatures}'],
          noteWriters: [organisers, '${content.authorids}', '${signatures}'],
        }),
        invitation({
          id: `${venueId}/-/Ethics_Review`,
          domain: venueId,
          form: defaultEthicsReviewForm,
          invitees: [`${venueId}/Ethics_Reviewers`],
          replyTo: config.submissionId,
          noteReaders: [organisers, '${signatures}'],
        }),
        invitation({
          id: `${venueId}/-/Registration`,
          domain: venueId,
          form: defaultRegistrationForm,
          invitees: [reviewers],
          noteReaders: [organisers, '${signatures}'],
        }),
        invitation({
          id: `${venueId}/-/${config.officialReviewName}`,
          domain: venueId,
          form: reviewForm(config),
          invitees: [reviewers],
          replyTo: config.submissionId,
          noteReaders: privateToForum,
        }),
        invitation({
          id: `${venueId}/-/${config.decisionName}`,
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
    const group = await this.#people.findGroup(venueId);
    const config = group?.data.config;
    if (!config) throw new AppError('NotFoundError', `Venue Not Found: ${venueId}`);
    return AuthorConsoleConfig.parse(config);
  }

  /** `POST /groups/members`: a venue's organisers (or super users) add members to its groups. */
  async addMembers(input: { id: string; members: string[] }, reader: Viewer): Promise<{ id: string; members: string[] }> {
    const repos = this.#repos();
    const group = await repos.people.findGroup(input.id);
    if (!group) throw new AppError('NotFoundError', `Group Not Found: ${input.id}`);
    const domain = typeof group.data.domain === 'string' ? group.data.domain : null;
    if (!reader.isSuperUser) {
      if (!domain) throw new AppError('ForbiddenError', `Only super users can change ${input.id}`);
      await this.#requireOrganiser(domain, reader, repos);
    }
    await this.#transaction(async ({ people }) => {
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
    const repos = this.#repos();
    const venue = await repos.people.findGroup(input.domain);
    if (!venue) throw new AppError('NotFoundError', `Group Not Found: ${input.domain}`);
    await this.#requireOrganiser(input.domain, reader, repos);
    if (venue.data.domain !== input.domain) {
      throw new AppError('ValidationError', `${input.domain} is not a venue`, { path: 'domain' });
    }
    if (!input.id.startsWith(`${input.domain}/`)) {
      throw new AppError('ValidationError', `The invitation must be inside its venue: ${input.domain}/…`, { path: 'id' });
    }
    const existing = await repos.venues.findInvitation(input.id);
    if (existing && existing.domain !== input.domain) {
      // Replacing another venue's invitation needs that venue's rights, and even then it stays there.
      await this.#requireOrganiser(existing.domain, reader, repos);
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
    const now = this.#now();
    const invitation: Invitation = { ...input, tauthor: reader.profileId, tcdate: existing?.tcdate ?? now, tmdate: now };
    await repos.venues.upsertInvitation(invitation);
    return invitation;
  }

  /** `GET /invitations?id=`: for the venue's organisers and super users, as the issue asks. */
  async invitation(id: string, reader: Viewer): Promise<Invitation> {
    const repos = this.#repos();
    const invitation = await repos.venues.findInvitation(id);
    if (!invitation) throw new AppError('NotFoundError', `Invitation Not Found: ${id}`);
    await this.#requireOrganiser(invitation.domain, reader, repos);
    return invitation;
  }

  /** An invitation whose readers include the caller (super users read every one); 404 otherwise. */
  async readableInvitation(id: string, reader: Reader): Promise<Invitation> {
    const repos = this.#repos();
    const invitation = await repos.venues.findInvitation(id);
    if (!invitation || !this.#canRead(invitation.readers, await this.identities(reader, repos), reader)) {
      throw new AppError('NotFoundError', `Invitation Not Found: ${id}`);
    }
    return invitation;
  }

  // ---- notes -----------------------------------------------------------------------------------

  /** Who may post to an invitation: its invitees, and super users. */
  #requireInvitee(invitation: Invitation, reader: Viewer, ids: Set<string>): void {
    if (!reader.isSuperUser && !invitation.invitees.some((i) => ids.has(i))) {
      throw new AppError('ForbiddenError', `You are not invited to post to ${invitation.id}`);
    }
  }

  /** Refuses (403) an upload for an invitation the reader may not post to: the rule of `POST /notes`. */
  async requireInvitee(invitation: Invitation, reader: Viewer): Promise<void> {
    this.#requireInvitee(invitation, reader, await this.identities(reader));
  }

  /**
   * `POST /notes`: a new note, or with `id` a revision of one. The content is checked against
   * the invitation's form (every problem at once); a file field must hold a URL this user
   * uploaded for this invitation and field. Every change is kept as an edit.
   */
  async postNote(input: PostNoteInput, reader: Viewer): Promise<Note> {
    return (await this.#post(input, reader)).note;
  }

  /**
   * `POST /notes/edits`, the real platform's way to post: the same rules as `POST /notes`
   * (see `PostNoteEditInput` for how its fields map), answered as the edit it made. With
   * `note.ddate` set it deletes the note instead.
   */
  async postNoteEdit(input: PostNoteEditInput, reader: Viewer): Promise<PostedNoteEdit> {
    const signatures = input.signatures ?? input.note.signatures;
    if (signatures && !reader.isSuperUser) {
      // One signs as oneself (any of one's usernames) or as a group one belongs to.
      const own = await this.identities(reader);
      const foreign = signatures.find((signature) => !own.has(signature) || signature === 'everyone' || signature === '~');
      if (foreign) throw new AppError('ForbiddenError', `You cannot sign as ${foreign}`, { path: 'signatures' });
    }
    if (typeof input.note.ddate === 'number') {
      if (!input.note.id) throw new AppError('MissingRequiredError', 'The property note.id is required to delete a note', { path: 'note/id' });
      const { note, editId } = await this.#delete(input.note.id, reader);
      return this.#postedEdit(note, editId);
    }
    const replyTo = input.note.replyto ?? input.note.forum;
    const { note, editId } = await this.#post(
      {
        invitation: input.invitation,
        content: input.note.content ?? {},
        ...(input.note.id ? { id: input.note.id } : {}),
        // A reply names the note it answers; a new submission's own id as its forum names nothing.
        ...(replyTo && replyTo !== input.note.id ? { forum: replyTo } : {}),
      },
      reader,
    );
    return this.#postedEdit(note, editId);
  }

  async #postedEdit(note: Note, editId: string): Promise<PostedNoteEdit> {
    const edit = await this.#repos().venues.findEdit(editId);
    if (!edit) throw new Error(`The edit ${editId} just written is gone`);
    const { note: _id, ...rest } = edit;
    return { ...rest, domain: note.domain, note };
  }

  /** `DELETE /notes`: a note's writers (or super users) delete it. */
  async deleteNote(id: string, reader: Viewer): Promise<{ status: string }> {
    await this.#delete(id, reader);
    return { status: 'ok' };
  }

  async #delete(id: string, reader: Viewer): Promise<{ note: Note; editId: string }> {
    const now = this.#now();
    return this.#transaction(async (repos) => {
      const note = await repos.venues.findNote(id);
      const ids = await this.identities(reader, repos);
      if (!note || note.ddate !== undefined || !this.#canRead(note.readers, ids, reader)) throw new AppError('NotFoundError', `Note Not Found: ${id}`);
      if (!reader.isSuperUser && !note.writers.some((w) => ids.has(w))) throw new AppError('ForbiddenError', `You cannot delete the note ${id}`);
      await repos.venues.deleteNote(id, now);
      const deleted: Note = { ...note, ddate: now, tmdate: now };
      return { note: deleted, editId: await repos.venues.insertEdit(deleted, reader.profileId, now) };
    });
  }

  async #post(input: PostNoteInput, reader: Viewer): Promise<{ note: Note; editId: string }> {
    const now = this.#now();
    const repos = this.#repos();
    if ((await repos.people.stateOf(reader.profileId)) === 'Limited') throw new AppError('ForbiddenError', 'A limited profile cannot author notes');
    const invitation = await repos.venues.findInvitation(input.invitation);
    if (!invitation) throw new AppError('NotFoundError', `Invitation Not Found: ${input.invitation}`);
    if (invitation.duedate !== undefined && now > invitation.duedate) {
      throw new AppError('ValidationError', `The invitation ${invitation.id} is closed`, { path: 'invitation' });
    }
    const ids = await this.identities(reader, repos);
    this.#requireInvitee(invitation, reader, ids);

    const previous = input.id ? await repos.venues.findNote(input.id) : null;
    if (input.id) {
      if (!previous || previous.ddate !== undefined || !this.#canRead(previous.readers, ids, reader)) throw new AppError('NotFoundError', `Note Not Found: ${input.id}`);
      if (previous.invitation !== invitation.id) {
        throw new AppError('ValidationError', `The note ${input.id} belongs to ${previous.invitation}`, { path: 'invitation' });
      }
      if (!reader.isSuperUser && !previous.writers.some((w) => ids.has(w))) {
        throw new AppError('ForbiddenError', `You cannot edit the note ${input.id}`);
      }
    }

    const forum = previous ? await repos.venues.findNote(previous.forum) : await this.#forumOf(invitation, input.forum, ids, reader, repos);
    const merged = { ...(previous?.content ?? {}), ...input.content };
    const problems = validateContent(invitation.form, merged);
    for (const [field, definition] of Object.entries(invitation.form)) {
      const url = fieldValue({ content: merged } as Note, field);
      if (definition.value.param.type !== 'file' || typeof url !== 'string') continue;
      if (previous && fieldValue(previous, field) === url) continue;
      if (!(await this.#uploads.uploadedBy(reader.profileId, url, invitation.id, field))) {
        problems.push({
          status: 400,
          name: 'ValidationError',
          message: `${definition.value.param.fieldName ?? field} must be a file you uploaded for this invitation and field`,
          details: { path: `content/${field}/value` },
        });
      }
    }
    if (problems.length > 0) throw AppError.fromItems(problems);
    const content = Object.fromEntries(
      Object.entries(merged).filter(([, entry]) => (entry as { value?: { delete?: unknown } }).value?.delete !== true),
    );

    const signatures = previous?.signatures ?? [reader.profileId];
    const expand = (list: string[]) =>
      [
        ...new Set(
          list.flatMap((item) => {
            if (item === '${signatures}') return signatures;
            if (item === '${content.authorids}') return authorIdsOf(content);
            if (item === '${forum.content.authorids}') return forum ? authorIdsOf(forum.content) : [];
            return [item];
          }),
        ),
      ];

    return this.#transaction(async ({ venues }) => {
      const note: Note = previous
        ? { ...previous, content, readers: expand(invitation.noteReaders), writers: expand(invitation.noteWriters), mdate: now, tmdate: now }
        : {
            id: newNoteId(),
            invitation: invitation.id,
            invitations: [invitation.id],
            domain: invitation.domain,
            number: await venues.nextNumber(invitation.id),
            forum: '',
            replyto: forum?.id ?? null,
            content,
            signatures,
            readers: expand(invitation.noteReaders),
            writers: expand(invitation.noteWriters),
            cdate: now,
            mdate: now,
            tcdate: now,
            tmdate: now,
          };
      if (!previous) note.forum = forum?.id ?? note.id;
      const fileFields = Object.entries(invitation.form)
        .filter(([, field]) => field.value.param.type === 'file')
        .map(([name]) => name);
      if (previous) await venues.updateNote(note, fileFields);
      else await venues.insertNote(note, fileFields);
      return { note, editId: await venues.insertEdit(note, reader.profileId, now) };
    });
  }

  /** The note a reply belongs to: required exactly when the invitation replies to another's notes. */
  async #forumOf(invitation: Invitation, forumId: string | undefined, ids: Set<string>, reader: Reader, repos: Repos): Promise<Note | null> {
    if (!invitation.replyTo) {
      if (forumId) throw new AppError('ValidationError', `Notes of ${invitation.id} are not replies`, { path: 'forum' });
      return null;
    }
    if (!forumId) throw new AppError('MissingRequiredError', `The property forum is required: notes of ${invitation.id} reply to a note`, { path: 'forum' });
    const forum = await repos.venues.findNote(forumId);
    if (!forum || forum.ddate !== undefined || forum.invitation !== invitation.replyTo || !this.#canRead(forum.readers, ids, reader)) {
      throw new AppError('ValidationError', `Note Not Found: ${forumId} is not a note of ${invitation.replyTo}`, { path: 'forum' });
    }
    return forum;
  }

  /**
   * `GET /notes`: the notes matching the query that the reader may read, sorted and paged as
   * asked, with how many there are in all. Asked by `id`, a missing note is a 404 and one the
   * reader may not read a 403, as on the real platform.
   */
  async notes(query: NotesQuery, reader: Reader): Promise<{ notes: Note[]; count: number }> {
    const repos = this.#repos();
    let author: string[] | undefined;
    const authorId = query['content.authorids'];
    if (authorId) {
      // A profile is an author under any of its usernames and confirmed emails.
      const profile = await repos.people.profileNamed(authorId);
      author = profile ? [...(await repos.people.usernamesOf(profile.id)), ...(await repos.people.confirmedEmailsOf(profile.id))] : [authorId];
    }
    const content = contentFilters(query);
    content.delete('authorids');
    const signedBy = [...(query.signature ? [query.signature] : []), ...[query.signatures ?? []].flat()];
    const found = await repos.venues.findNotes({
      ...(query.id ? { id: query.id } : {}),
      ...(query.invitation ? { invitation: query.invitation } : {}),
      ...(query.forum ? { forum: query.forum } : {}),
      ...(query.replyto ? { replyto: query.replyto } : {}),
      ...(query.domain ? { domain: query.domain } : {}),
      ...(query.number !== undefined ? { number: query.number } : {}),
      ...(author ? { author } : {}),
      ...(signedBy.length > 0 ? { signedBy } : {}),
      ...(query.mintcdate !== undefined ? { mintcdate: query.mintcdate } : {}),
      content,
      trash: query.trash === true,
    });
    const ids = await this.identities(reader, repos);
    // Deleted notes are shown (with `trash`) only to those who could write them.
    const readable = found.filter((note) => this.#canRead(note.readers, ids, reader) && (note.ddate === undefined || reader?.isSuperUser || note.writers.some((w) => ids.has(w))));
    if (query.id && readable.length === 0) {
      if (found.length === 0) throw new AppError('NotFoundError', `Note Not Found: ${query.id}`);
      throw new AppError('ForbiddenError', `You cannot read the note ${query.id}`);
    }
    const sorted = sortNotes(readable, query.sort);
    const after = query.after;
    const from = after !== undefined ? sorted.filter((note) => note.id > after) : sorted.slice(query.offset ?? 0);
    return { notes: query.stream ? from : from.slice(0, query.limit ?? 1000), count: readable.length };
  }

  /** A note the reader may read: 404 when it does not exist, 403 when it is not theirs to read. */
  async readableNote(noteId: string, reader: Reader): Promise<Note> {
    const repos = this.#repos();
    const note = await repos.venues.findNote(noteId);
    if (!note || note.ddate !== undefined) throw new AppError('NotFoundError', `Note Not Found: ${noteId}`);
    if (!this.#canRead(note.readers, await this.identities(reader, repos), reader)) {
      throw new AppError('ForbiddenError', `You cannot read the note ${noteId}`);
    }
    return note;
  }

  /** An invitation by id, whoever asks: what an upload for one of its fields is checked against. */
  invitationById(id: string): Promise<Invitation | null> {
    return this.#repo.findInvitation(id);
  }

  /** The notes (not deleted) whose `file` fields hold, or once held, a stored file's URL. */
  notesWithFile(url: string): Promise<Note[]> {
    return this.#repo.notesWithFile(url);
  }

  /** Whether a field of a note's form is a `file` field. */
  async isFileField(note: Note, field: string): Promise<boolean> {
    const invitation = await this.#repos().venues.findInvitation(note.invitation);
    return invitation?.form[field]?.value.param.type === 'file';
  }

  /** The first of `notes` the reader may read, if any. */
  async firstReadable(notes: Note[], reader: Reader): Promise<Note | undefined> {
    const ids = await this.identities(reader);
    return notes.find((note) => this.#canRead(note.readers, ids, reader));
  }

  /**
   * `GET /notes/edits`: every revision of a note the reader may read (or the one revision asked
   * for by id), oldest first unless sorted otherwise; a revision of a note the reader may not read
   * does not exist for them.
   */
  async edits(query: NoteEditsQuery, reader: Reader): Promise<NoteEdit[]> {
    const repos = this.#repos();
    const one = query.id !== undefined ? await repos.venues.findEdit(query.id) : null;
    const noteId = one?.note.id ?? query['note.id'];
    const note = noteId ? await repos.venues.findNote(noteId) : null;
    const ids = await this.identities(reader, repos);
    // A deleted note's history stays with those who could write it.
    const visible = note && this.#canRead(note.readers, ids, reader) && (note.ddate === undefined || reader?.isSuperUser || note.writers.some((w) => ids.has(w)));
    if (!note || !visible) {
      throw new AppError('NotFoundError', query.id !== undefined ? `Edit Not Found: ${query.id}` : `Note Not Found: ${noteId}`);
    }
    let edits = one ? [one] : await repos.venues.editsOf(note.id);
    if (query.invitation) edits = edits.filter((edit) => edit.invitation === query.invitation);
    if (query.sort?.endsWith(':desc')) edits = edits.reverse();
    return edits;
  }

  /** `GET /venues`: venues by id, ids, or the invitations they own. Their configs are public. */
  async venues(query: VenuesQuery): Promise<Venue[]> {
    const repos = this.#repos();
    const ids = new Set([...(query.id ? [query.id] : []), ...(query.ids ?? []), ...(await repos.venues.domainsOfInvitations(query.invitations ?? []))]);
    // A venue is a group holding an author-console config.
    const venues = (await repos.people.groupsAmong([...ids])).filter((group) => group.data.config !== undefined);
    return venues.map((group) => ({ id: group.id, config: AuthorConsoleConfig.parse(group.data.config), tcdate: group.tcdate, tmdate: group.tmdate }));
  }

  /**
   * `GET /groups`: a group by id, the groups whose id starts with `prefix`, or the groups
   * `member` belongs to directly; each only when the caller may see who is in it: super users,
   * the people the group itself names (its id and its members: a person's own `~Id` and email
   * groups), and the organisers of the venue the group belongs to. A group's `readers` field does
   * not grant this: venue groups are readable by everyone as venues, but their members (reviewers,
   * authors) are not public. A group asked for by id that the caller may not see does not exist
   * for them.
   */
  async groups(query: GroupsQuery, reader: Reader): Promise<Group[]> {
    const repos = this.#repos();
    const ids =
      query.id !== undefined
        ? [query.id]
        : query.prefix !== undefined
          ? await repos.people.groupIdsWithPrefix(query.prefix, 10_000)
          : await repos.people.groupsOf([query.member ?? '']);
    const identities = await this.identities(reader, repos);
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
      const visible =
        Boolean(reader?.isSuperUser) ||
        (reader !== null && (identities.has(group.id) || group.members.some((m) => identities.has(m)))) ||
        (domain !== undefined && (await mayOrganise(domain)));
      if (!visible) continue;
      if (query.domain !== undefined && domain !== query.domain) continue;
      const list = (key: string) => (Array.isArray(group.data[key]) ? (group.data[key] as unknown[]).filter((v): v is string => typeof v === 'string') : undefined);
      groups.push({
        id: group.id,
        members: group.members,
        ...Object.fromEntries(['readers', 'writers', 'signatures', 'signatories', 'impersonators'].flatMap((key) => (list(key) ? [[key, list(key)]] : []))),
        ...(domain !== undefined ? { domain } : {}),
      });
    }
    if (query.id !== undefined && groups.length === 0) throw new AppError('NotFoundError', `Group Not Found: ${query.id}`);
    return groups;
  }

  /**
   * `GET /logs/process?id=`: how the processing of an edit went. Edits here have no process
   * functions: an edit is complete when its request answers, so a revision the caller may read
   * has one log, `ok` (clients that wait for processing, as the Python client's
   * `await_process`, stop waiting at once).
   */
  async processLogs(editId: string, reader: Reader): Promise<Array<{ id: string; status: 'ok'; invitation: string; cdate: number }>> {
    const [edit] = await this.edits({ id: editId }, reader);
    return edit ? [{ id: edit.id, status: 'ok', invitation: edit.invitation, cdate: edit.tcdate }] : [];
  }

  // ---- the author console ----------------------------------------------------------------------

  /**
   * What the author console shows the caller: their submissions to the venue (notes of
   * `submissionId` whose `authorSubmissionField` holds one of their ids), and for each the
   * official reviews' ratings (min, max, average), the confidence, the decision and, unless
   * `showAuthorProfileStatus` is false, each author's profile state.
   */
  async authorConsole(venueId: string, reader: Viewer): Promise<AuthorConsole> {
    const config = await this.venueConfig(venueId);
    const repos = this.#repos();
    const ids = await this.identities(reader, repos);
    const field = config.authorSubmissionField.replace(/^content\./, '');
    const mine = (await repos.venues.findNotes({ invitation: config.submissionId })).filter((note) => {
      const value = fieldValue(note, field);
      return Array.isArray(value) && value.some((v) => typeof v === 'string' && ids.has(v)) && this.#canRead(note.readers, ids, reader);
    });
    const reviewInvitation = `${venueId}/-/${config.officialReviewName}`;
    const decisionInvitation = `${venueId}/-/${config.decisionName}`;
    const submissions = [];
    for (const note of mine) {
      const replies = (await repos.venues.findNotes({ forum: note.id })).filter((n) => this.#canRead(n.readers, ids, reader));
      const reviews = replies.filter((n) => n.invitation === reviewInvitation);
      const decisionNote = replies.filter((n) => n.invitation === decisionInvitation).at(-1);
      const ratings: Record<string, RatingSummary> = {};
      for (const { display, fields } of ratingFields(config.reviewRatingName)) {
        const values = reviews
          .map((review) => fields.map((f) => ratingValue(fieldValue(review, f))).find((v) => v !== null) ?? null)
          .filter((v): v is number => v !== null);
        ratings[display] = summarise(values);
      }
      const confidence = summarise(
        reviews.map((r) => ratingValue(fieldValue(r, config.reviewConfidenceName))).filter((v): v is number => v !== null),
      );
      const decision = decisionNote ? fieldValue(decisionNote, decisionField(config)) : undefined;
      const submission = {
        note,
        reviewCount: reviews.length,
        ratings,
        confidence,
        decision: typeof decision === 'string' ? decision : null,
        ...(config.showAuthorProfileStatus !== false ? { authors: await this.#authorStates(note, field, repos) } : {}),
      };
      submissions.push(submission);
    }
    return { venueId, header: config.header, submissions };
  }

  async #authorStates(note: Note, field: string, repos: Repos) {
    const value = fieldValue(note, field);
    const authors = Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
    return Promise.all(
      authors.map(async (id) => {
        return { id, state: (await repos.people.profileNamed(id))?.state ?? null };
      }),
    );
  }
}

/** The official review form: one field per configured rating field, the confidence, the review text. */
export function reviewForm(config: AuthorConsoleConfig): FormDefinition {
  const rating = { type: 'string', regex: '-?\\d+(\\.\\d+)?(: .*)?' } as const;
  const form: FormDefinition = {};
  let order = 1;
  for (const { fields } of ratingFields(config.reviewRatingName)) {
    fields.forEach((field, i) => {
      form[field] ??= { order: order++, description: `Rating: a number, optionally followed by ": " and its meaning`, value: { param: { ...rating, ...(i > 0 ? { optional: true } : {}) } } };
    });
  }
  form[config.reviewConfidenceName] ??= { order: order++, description: 'Confidence in this review', value: { param: rating } };
  form.review = { order: order++, description: 'The review. Markdown is allowed.', value: { param: { type: 'string', maxLength: 200000, input: 'textarea', markdown: true, optional: true } } };
  return form;
}

export function decisionForm(config: AuthorConsoleConfig): FormDefinition {
  return {
    [decisionField(config)]: {
      order: 1,
      description: 'The decision on this submission',
      value: { param: { type: 'string', input: 'radio', enum: ['Accept (Oral)', 'Accept (Poster)', 'Reject'] } },
    },
    comment: { order: 2, value: { param: { type: 'string', maxLength: 5000, input: 'textarea', markdown: true, optional: true } } },
  };
}

/** Notes in the order `GET /notes` was asked for; posting order (as stored) by default. */
function sortNotes(notes: Note[], sort: NotesQuery['sort']): Note[] {
  if (!sort) return notes;
  const [key, direction] = sort.split(':') as ['number' | 'tcdate' | 'tmdate' | 'cdate' | 'id', 'asc' | 'desc' | undefined];
  const sign = direction === 'desc' ? -1 : 1;
  return [...notes].sort((a, b) => {
    const [x, y] = [a[key], b[key]];
    return sign * (x < y ? -1 : x > y ? 1 : 0);
  });
}

/** A note id: 10 random characters, as the platform's ids look. */
function newNoteId(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = crypto.getRandomValues(new Uint8Array(10));
  return Array.from(bytes, (b) => alphabet[b % alphabet.length]).join('');
}
