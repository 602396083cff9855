import {
  AppError,
  contentFilters,
  validateContent,
  valueIn,
  type Invitation,
  type Note,
  type NoteEdit,
  type NoteEditsQuery,
  type NotesQuery,
  type PostedNoteEdit,
  type PostNoteEditInput,
  type PostNoteInput,
} from '../../shared/index.ts';
import { Gate } from '../gate.ts';
import type { Viewer } from '../accounts/viewer.ts';
import type { UploadsView } from './collaborators.ts';
import { type Reader, type Repos, type VenueDeps, VenuePart } from './readers.ts';
import { authorIdsOf } from './repository.ts';
import { pageOf } from './paging.ts';

/** The value held by one of a note's fields. */
export const fieldValue = (note: Note, field: string): unknown => valueIn(note.content, field);

/**
 * Notes: posting, editing and deleting them (every change kept as an edit), and reading them,
 * their revisions and their processing logs. Readers are enforced on every read: a guest sees
 * only notes readable by `everyone`.
 */
export class NoteService extends VenuePart {
  readonly #uploads: UploadsView;
  /**
   * Lists of notes at once: a list reads every note its query matches before the reader's rights
   * sort and page them, so many asked together (tens of megabytes each for a venue of thousands
   * of submissions) would otherwise hold the process's memory. Four at a time, which is what
   * bounds it; 256 waiting, 64 of one person's (or one guest address's) running or waiting. The
   * real web client asks for every page of a large venue's submissions at once and reads any
   * refusal as a failure of the page, so lists wait their turn far past what a page asks for; a
   * flood from one caller is refused, one from many callers finds the queue full (503).
   */
  readonly #lists = new Gate({ width: 4, maxWaiting: 256, perOwner: 64, what: 'note lists' });

  constructor(deps: VenueDeps & { uploads: UploadsView }) {
    super(deps);
    this.#uploads = deps.uploads;
  }

  /** Who may post to an invitation: its invitees, and super users. */
  #requireInvitee(invitation: Invitation, reader: Viewer, ids: Set<string>): void {
    if (!reader.isSuperUser && !invitation.invitees.some((i) => ids.has(i))) {
      throw new AppError('ForbiddenError', `You are not invited to post to ${invitation.id}`);
    }
  }

  /** Refuses (403) an upload for an invitation the reader may not post to: the rule of `POST /notes`. */
  async requireInvitee(invitation: Invitation, reader: Viewer): Promise<void> {
    this.requireAuthor(reader);
    this.#requireInvitee(invitation, reader, await this.readers.identities(reader));
  }

  /** A `Limited` profile may sign in and read, but not author: no notes, files or deletions (`Viewer.mayAuthor`). */
  requireAuthor(reader: Viewer): void {
    if (!reader.mayAuthor) throw new AppError('ForbiddenError', 'A limited profile cannot author notes');
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
      const own = await this.readers.identities(reader);
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
    const edit = await this.repos().venues.findEdit(editId);
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
    this.requireAuthor(reader);
    const now = this.now();
    return this.transaction(async (repos) => {
      const note = await repos.venues.findNote(id);
      const ids = await this.readers.identities(reader, repos.people);
      if (!note || note.ddate !== undefined || !this.readers.canRead(note.readers, ids, reader)) throw new AppError('NotFoundError', `Note Not Found: ${id}`);
      if (!reader.isSuperUser && !note.writers.some((w) => ids.has(w))) throw new AppError('ForbiddenError', `You cannot delete the note ${id}`);
      await repos.venues.deleteNote(id, now);
      const deleted: Note = { ...note, ddate: now, tmdate: now };
      return { note: deleted, editId: await repos.venues.insertEdit(deleted, reader.profileId, now) };
    });
  }

  async #post(input: PostNoteInput, reader: Viewer): Promise<{ note: Note; editId: string }> {
    const now = this.now();
    const repos = this.repos();
    this.requireAuthor(reader);
    const invitation = await repos.venues.findInvitation(input.invitation);
    if (!invitation) throw new AppError('NotFoundError', `Invitation Not Found: ${input.invitation}`);
    if (invitation.duedate !== undefined && now > invitation.duedate) {
      throw new AppError('ValidationError', `The invitation ${invitation.id} is closed`, { path: 'invitation' });
    }
    const ids = await this.readers.identities(reader, repos.people);
    this.#requireInvitee(invitation, reader, ids);
    // Uploads are another area's tables, read on its own connection: asked before the transaction
    // (on SQLite's one connection, a read from outside it would wait for the transaction to end).
    const uploaded = await this.#uploadedFiles(invitation, input.content, reader);

    // A revision merges its fields into the note as it stands: the note is read, checked and
    // written in one transaction, so two revisions posted at once each keep the other's fields
    // (on PostgreSQL the second is run again on the note the first wrote).
    return this.transaction(async (trx) => {
      const { venues } = trx;
      const previous = input.id ? await venues.findNote(input.id) : null;
      if (input.id) {
        if (!previous || previous.ddate !== undefined || !this.readers.canRead(previous.readers, ids, reader)) throw new AppError('NotFoundError', `Note Not Found: ${input.id}`);
        if (previous.invitation !== invitation.id) {
          throw new AppError('ValidationError', `The note ${input.id} belongs to ${previous.invitation}`, { path: 'invitation' });
        }
        if (!reader.isSuperUser && !previous.writers.some((w) => ids.has(w))) {
          throw new AppError('ForbiddenError', `You cannot edit the note ${input.id}`);
        }
      }

      const forum = previous ? await venues.findNote(previous.forum) : await this.#forumOf(invitation, input.forum, ids, reader, trx);
      const merged = { ...(previous?.content ?? {}), ...input.content };
      const problems = validateContent(invitation.form, merged);
      for (const [field, definition] of Object.entries(invitation.form)) {
        const url = fieldValue({ content: merged } as Note, field);
        if (definition.value.param.type !== 'file' || typeof url !== 'string') continue;
        // Kept from the revision before, where it was already a checked file (the file index says
        // so): a value typed while the field was text is checked now, as if sent new.
        if (previous && fieldValue(previous, field) === url && (await venues.heldAsFile(previous.id, field, url))) continue;
        if (!uploaded.has(`${field}\n${url}`)) {
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

      const note: Note = previous
        ? { ...previous, content, readers: expand(invitation.noteReaders), writers: expand(invitation.noteWriters), mdate: now, tmdate: now }
        : {
            id: newNoteId(),
            invitation: invitation.id,
            invitations: [invitation.id],
            version: 2,
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

  /**
   * The fields and URLs (as `field` newline `url`) of the posted content's file fields that hold a file the reader
   * uploaded for this invitation and field. A URL the note already holds in that field needs no
   * upload of the reader's; that is decided against the note as read in the transaction.
   */
  async #uploadedFiles(invitation: Invitation, content: Record<string, unknown>, reader: Viewer): Promise<Set<string>> {
    const uploaded = new Set<string>();
    for (const [field, definition] of Object.entries(invitation.form)) {
      const url = fieldValue({ content } as Note, field);
      if (definition.value.param.type !== 'file' || typeof url !== 'string') continue;
      if (await this.#uploads.uploadedBy(reader.profileId, url, invitation.id, field)) uploaded.add(`${field}\n${url}`);
    }
    return uploaded;
  }

  /** The note a reply belongs to: required exactly when the invitation replies to another's notes. */
  async #forumOf(invitation: Invitation, forumId: string | undefined, ids: Set<string>, reader: Reader, repos: Repos): Promise<Note | null> {
    if (!invitation.replyTo) {
      if (forumId) throw new AppError('ValidationError', `Notes of ${invitation.id} are not replies`, { path: 'forum' });
      return null;
    }
    if (!forumId) throw new AppError('MissingRequiredError', `The property forum is required: notes of ${invitation.id} reply to a note`, { path: 'forum' });
    const forum = await repos.venues.findNote(forumId);
    if (!forum || forum.ddate !== undefined || forum.invitation !== invitation.replyTo || !this.readers.canRead(forum.readers, ids, reader)) {
      throw new AppError('ValidationError', `Note Not Found: ${forumId} is not a note of ${invitation.replyTo}`, { path: 'forum' });
    }
    return forum;
  }

  /**
   * `GET /notes`: the notes matching the query that the reader may read, sorted and paged as
   * asked, with how many there are in all. Asked by `id`, a missing note is a 404 and one the
   * reader may not read a 403, as on the real platform. A list waits its turn (`#lists`) among
   * `owner`'s (the person; a guest, by address); a note asked for by its id reads one note, and
   * waits for no list.
   */
  notes(query: NotesQuery, reader: Reader, owner: string): Promise<{ notes: Note[]; count: number }> {
    // A note asked for by its id reads one note: it waits for no list.
    if (query.id !== undefined) return this.#notes(query, reader);
    return this.#lists.run(owner, () => this.#notes(query, reader));
  }

  async #notes(query: NotesQuery, reader: Reader): Promise<{ notes: Note[]; count: number }> {
    const repos = this.repos();
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
      ...(query.invitations ? { invitations: query.invitations } : {}),
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
    const ids = await this.readers.identities(reader, repos.people);
    // Deleted notes are shown (with `trash`) only to those who could write them.
    const readable = found.filter((note) => this.readers.canRead(note.readers, ids, reader) && (note.ddate === undefined || reader?.isSuperUser || note.writers.some((w) => ids.has(w))));
    if (query.id && readable.length === 0) {
      if (found.length === 0) throw new AppError('NotFoundError', `Note Not Found: ${query.id}`);
      throw new AppError('ForbiddenError', `You cannot read the note ${query.id}`);
    }
    const sorted = sortNotes(readable, query.sort);
    return { notes: pageOf(sorted, query, 1000), count: readable.length };
  }

  /** A note the reader may read: 404 when it does not exist, 403 when it is not theirs to read. */
  async readableNote(noteId: string, reader: Reader): Promise<Note> {
    const repos = this.repos();
    const note = await repos.venues.findNote(noteId);
    if (!note || note.ddate !== undefined) throw new AppError('NotFoundError', `Note Not Found: ${noteId}`);
    if (!this.readers.canRead(note.readers, await this.readers.identities(reader, repos.people), reader)) {
      throw new AppError('ForbiddenError', `You cannot read the note ${noteId}`);
    }
    return note;
  }


  /** The notes (not deleted) whose `file` fields hold, or once held, a stored file's URL. */
  notesWithFile(url: string): Promise<Note[]> {
    return this.repos().venues.notesWithFile(url);
  }

  /**
   * Whether the note's `field` held `url` as a file: written while the field was a `file` field of
   * its form, after the upload checks (the file index). The form as it is now decides nothing: an
   * organiser who turned a text field into a file field would otherwise read any file whose URL a
   * note's text held.
   */
  heldAsFile(note: Note, field: string, url: string): Promise<boolean> {
    return this.repos().venues.heldAsFile(note.id, field, url);
  }

  /** The first of `notes` the reader may read, if any. */
  async firstReadable(notes: Note[], reader: Reader): Promise<Note | undefined> {
    const ids = await this.readers.identities(reader);
    return notes.find((note) => this.readers.canRead(note.readers, ids, reader));
  }

  /**
   * `GET /notes/edits`: every revision of a note the reader may read (or the one revision asked
   * for by id), oldest first unless sorted otherwise; a revision of a note the reader may not read
   * does not exist for them.
   */
  async edits(query: NoteEditsQuery, reader: Reader): Promise<NoteEdit[]> {
    const repos = this.repos();
    const one = query.id !== undefined ? await repos.venues.findEdit(query.id) : null;
    const noteId = one?.note.id ?? query['note.id'];
    const note = noteId ? await repos.venues.findNote(noteId) : null;
    const ids = await this.readers.identities(reader, repos.people);
    // A deleted note's history stays with those who could write it.
    const visible = note && this.readers.canRead(note.readers, ids, reader) && (note.ddate === undefined || reader?.isSuperUser || note.writers.some((w) => ids.has(w)));
    if (!note || !visible) {
      throw new AppError('NotFoundError', query.id !== undefined ? `Edit Not Found: ${query.id}` : `Note Not Found: ${noteId}`);
    }
    let edits = one ? [one] : await repos.venues.editsOf(note.id);
    if (query.invitation) edits = edits.filter((edit) => edit.invitation === query.invitation);
    if (query.sort?.endsWith(':desc')) edits = edits.reverse();
    return edits;
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
