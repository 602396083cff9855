/**
 * Reading stored files back: the file of a note's field (or of one of its revisions), several
 * notes' files for a zip, a stored PDF by its address, and two revisions of a file field to
 * compare. What it answers is decided by who may read the note that holds the file, so it asks
 * venues and notes, and never the uploads service; the HTTP adapter (`server/http/files.ts`)
 * streams the bytes, one file or a zip of several.
 */
import { AppError, fileUrlExtension, valueIn, type NoteEdit } from '../../shared/index.ts';
import type { Viewer } from '../accounts/viewer.ts';
import type { Config } from '../config.ts';
import type { NoteService } from '../venue/notes.ts';
import type { VenueService } from '../venue/venues.ts';
import type { AttachmentsRepository } from './repository.ts';
import type { FileStore } from './store/file-store.ts';

/** A stored file to send: its URL (the store reads it by it), and how to describe it. */
export interface StoredFile {
  url: string;
  sha1: string;
  extension: string;
  /** A safe download name, from the note's title. */
  filename: string;
  size: number;
  modifiedAt: Date;
}

/** What reading files back asks of venues: who may read a group or an invitation. */
export type ReadableVenues = Pick<VenueService, 'groups' | 'readableInvitation'>;

/** What reading files back asks of notes: who may read the notes (and revisions) that hold a stored file. */
export type ReadableNotes = Pick<NoteService, 'notesWithFile' | 'firstReadable' | 'readableNote' | 'heldAsFile' | 'edits'>;

/** A file name safe in any header and any file system: the note's title, tamed. */
function safeFilename(title: unknown, fallback: string, extension: string): string {
  const base = typeof title === 'string' ? title.replace(/[^A-Za-z0-9 ._-]+/g, ' ').replace(/\s+/g, ' ').trim().slice(0, 100) : '';
  return `${base || fallback}.${extension}`;
}

export class DownloadsService {
  readonly #repo: Pick<AttachmentsRepository, 'isUploader'>;
  readonly #store: FileStore;
  readonly #venues: ReadableVenues;
  readonly #notes: ReadableNotes;
  readonly #config: Pick<Config, 'baseUrl'>;

  constructor(deps: { repo: Pick<AttachmentsRepository, 'isUploader'>; store: FileStore; venues: ReadableVenues; notes: ReadableNotes; config: Pick<Config, 'baseUrl'> }) {
    this.#repo = deps.repo;
    this.#store = deps.store;
    this.#venues = deps.venues;
    this.#notes = deps.notes;
    this.#config = deps.config;
  }

  /** Where the files are read from, for the adapter that streams them. */
  get store(): FileStore {
    return this.#store;
  }

  /** The file of a note's field: 404 for a missing note or field, 403 for a note the reader may not read. */
  async fileOfNote(noteId: string, field: string, reader: Viewer | null): Promise<StoredFile> {
    const note = await this.#notes.readableNote(noteId, reader);
    const url = valueIn(note.content, field);
    if (typeof url !== 'string' || fileUrlExtension(url) === null || !(await this.#notes.heldAsFile(note, field, url))) {
      throw new AppError('NotFoundError', `Attachment Not Found: ${field} of ${noteId}`);
    }
    return this.#stored(url, (note.content.title as { value?: unknown } | undefined)?.value, noteId);
  }

  /** The files of a field of several notes, for one zip: every note must be readable and hold one, and the first refusal is the whole answer. */
  filesOfNotes(noteIds: string[], field: string, reader: Viewer | null): Promise<StoredFile[]> {
    return Promise.all(noteIds.map((id) => this.fileOfNote(id, field, reader)));
  }

  /**
   * `GET /notes/edits/attachment`: a file field as one revision of a note held it, for the
   * note's readers (a revision of a note one may not read does not exist for them).
   */
  async fileOfEdit(editId: string, field: string, reader: Viewer | null): Promise<StoredFile> {
    const [edit] = await this.#notes.edits({ id: editId }, reader);
    const note = edit ? await this.#notes.readableNote(edit.note.id, reader) : null;
    const url = (edit ? valueIn(edit.content, field) : undefined);
    if (!edit || !note || typeof url !== 'string' || fileUrlExtension(url) === null || !(await this.#notes.heldAsFile(note, field, url))) {
      throw new AppError('NotFoundError', `Attachment Not Found: ${field} of edit ${editId}`);
    }
    return this.#stored(url, (edit.content.title as { value?: unknown } | undefined)?.value, note.id);
  }

  /**
   * `GET /groups/attachment` and `GET /invitations/attachment`. On the real platform a group's or
   * an invitation's content may hold files; here neither has content fields (venue files belong
   * to notes), so once the group or invitation is found readable, the answer is that it holds no
   * such file: 404 either way, with a message that says which.
   */
  async fileOfEntity(kind: 'group' | 'invitation', id: string, field: string, reader: Viewer | null): Promise<StoredFile> {
    if (kind === 'group') await this.#venues.groups({ id }, reader);
    else await this.#venues.readableInvitation(id, reader);
    throw new AppError('NotFoundError', `Attachment Not Found: the ${kind} ${id} holds no file ${field}`);
  }

  /**
   * `GET /pdf/{id}`: a stored PDF by the value saved in a note (`/pdf/<sha1>.pdf`, `<sha1>.pdf` or
   * `<sha1>`), for the readers of a note that references it (now or in an earlier revision) and
   * for its uploader.
   */
  async pdfById(id: string, reader: Viewer | null): Promise<StoredFile> {
    const sha1 = /^(?:\/?pdf\/)?([0-9a-f]{40})(?:\.pdf)?$/.exec(id)?.[1];
    if (!sha1) throw new AppError('NotFoundError', `PDF Not Found: ${id}`);
    const url = `/pdf/${sha1}.pdf`;
    const notes = await this.#notes.notesWithFile(url);
    const readable = await this.#notes.firstReadable(notes, reader);
    // A PDF one may not read is not found, as a missing one is: its address is its SHA-1, and a
    // 403 would tell anyone holding a file whether someone has stored it here.
    if (!readable && !(reader && (await this.#repo.isUploader(reader.profileId, url)))) throw new AppError('NotFoundError', `PDF Not Found: ${id}`);
    return this.#stored(url, (readable?.content.title as { value?: unknown } | undefined)?.value, sha1);
  }

  async #stored(url: string, title: unknown, fallback: string): Promise<StoredFile> {
    const extension = fileUrlExtension(url);
    const info = extension ? await this.#store.info(url) : null;
    if (!extension || !info) throw new AppError('NotFoundError', `File Not Found: ${url}`);
    const sha1 = url.slice(url.lastIndexOf('/') + 1, url.lastIndexOf('.'));
    return { url, sha1, extension, filename: safeFilename(title, fallback, extension), ...info };
  }

  /**
   * `GET /pdf/compare`: two revisions (edit ids) of a note's file field, and the address of a
   * page that shows them side by side.
   */
  async compare(
    query: { noteId: string; leftId: string; rightId: string; field: string },
    reader: Viewer | null,
  ): Promise<{ leftNote: NoteEdit; rightNote: NoteEdit; viewerUrl: string }> {
    const edits = await this.#notes.edits({ 'note.id': query.noteId }, reader);
    const pick = (id: string, path: string) => {
      const edit = edits.find((e) => e.id === id);
      if (!edit) throw new AppError('NotFoundError', `Edit Not Found: ${id}`, { path });
      const value = valueIn(edit.content, query.field);
      if (typeof value !== 'string' || fileUrlExtension(value) === null) {
        throw new AppError('NotFoundError', `The edit ${id} has no file in ${query.field}`, { path: 'field' });
      }
      return edit;
    };
    const leftNote = pick(query.leftId, 'leftId');
    const rightNote = pick(query.rightId, 'rightId');
    const params = new URLSearchParams(query);
    return { leftNote, rightNote, viewerUrl: `${this.#config.baseUrl}/pdf/compare/view?${params.toString()}` };
  }
}
