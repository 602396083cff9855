/**
 * Uploads: what every upload goes through (who may upload, the invitation's file field, its
 * extension and limit, the content checks, keeping the file under its content address) and
 * whole files (`PUT /attachment`). Files sent in chunks are `ChunkedUploadsService`
 * (chunked-uploads.ts), tus's uploads `TusService` (tus.ts), both on these checks; reading files
 * back is `DownloadsService` (downloads.ts).
 */
import {
  AppError,
  checkFileFor,
  ownField,
  parseOrThrow,
  tooLargeMessage,
  UploadFields,
  type FieldParam,
  type Invitation,
  type UploadRules,
  type UploadRulesQuery,
} from '../../shared/index.ts';
import type { HumanVerifier } from '../accounts/human-verification.ts';
import type { Viewer } from '../accounts/viewer.ts';
import { MB, type Config } from '../config.ts';
import type { NoteService } from '../venue/notes.ts';
import type { Metrics } from '../metrics/events.ts';
import type { VenueService } from '../venue/venues.ts';
import type { AttachmentsRepository } from './repository.ts';
import { KeyedLine } from './keyed-line.ts';
import { removeQuietly } from './store/disk.ts';
import type { FileStore, Received } from './store/file-store.ts';

/** What uploads count in the metrics (`metrics/events.ts`). */
export type UploadMetrics = Pick<Metrics, 'upload' | 'chunkStored' | 'assembly'>;

/** How many chunked uploads one person may have unfinished at a time. */
export const OPEN_UPLOADS_PER_PERSON = 20;

/** What the multipart adapter hands over: the text fields, and the file part if there was one. */
export interface UploadRequest {
  fields: Record<string, string>;
  file: (Received & { filename: string }) | null;
}

/** What uploads ask of venues: the invitation an upload is for. */
export type UploadVenues = Pick<VenueService, 'invitationById'>;

/**
 * Reads an invitation by its id. One request asks for its invitation up to three times (its
 * limit and a chunk's place before the body is read, its checks after): `invitationsOnce` gives
 * a reader that reads each once, for one request. The checks on what is read run every time
 * (the due date against the clock then); an edit of the invitation while the body arrives is
 * seen by the next request.
 */
export type InvitationReader = (id: string) => Promise<Invitation | null>;

/** What uploads ask of notes: whether the uploader is invited to post to the invitation, and may still author at all. */
export type UploadNotes = Pick<NoteService, 'requireInvitee' | 'requireAuthor'>;

const PDF_SIGNATURE = Buffer.from('%PDF-');
/**
 * Every upload, whole or in chunks, goes through one pipeline: the adapter streams the file part
 * into a temporary file (hashing, counting, cut off past the field's `maxSize`), then this
 * service checks it and keeps it under its content address, or removes it. Nothing is kept
 * unless every check passed.
 */
export class UploadsService {
  readonly #repo: AttachmentsRepository;
  readonly #store: FileStore;
  readonly #venues: UploadVenues;
  readonly #notes: UploadNotes;
  readonly #verifier: HumanVerifier;
  /** Uploads each person is beginning in this process: admitted, not yet recorded or refused (`beginUpload`). */
  readonly #beginning = new Map<string, number>();
  /** Each person's new uploads in this process, one after another (`inTurn`). */
  readonly #opening = new KeyedLine();
  readonly #config: Config;
  readonly #metrics: UploadMetrics | undefined;
  readonly #now: () => number;

  constructor(deps: { repo: AttachmentsRepository; store: FileStore; venues: UploadVenues; notes: UploadNotes; verifier: HumanVerifier; config: Config; metrics?: UploadMetrics; now?: () => number }) {
    this.#repo = deps.repo;
    this.#store = deps.store;
    this.#venues = deps.venues;
    this.#notes = deps.notes;
    this.#verifier = deps.verifier;
    this.#config = deps.config;
    this.#metrics = deps.metrics;
    this.#now = deps.now ?? Date.now;
  }

  /**
   * Runs `work` for `person` after any other of theirs begun before it in this process has ended:
   * the open uploads' count and the new upload's row (`tus.ts`, `chunked-uploads.ts`), so that of
   * uploads begun at once each counts the ones before it, and exactly as many as the limit leaves
   * room for are taken. Uploads begun at once through several processes are counted again once
   * their rows are in (each process's own are in line here).
   */
  inTurn<T>(person: string, work: () => Promise<T>): Promise<T> {
    return this.#opening.run(person, work);
  }

  /** Where the multipart adapter receives a file part into. */
  get store(): FileStore {
    return this.#store;
  }

  /**
   * The largest file of any upload: `MAX_UPLOAD_MB`, cut to what the store can keep (S3's 5 GiB,
   * `FileStore.maxFileBytes`). A field's own `maxSize` is cut to the store's limit too (`target`).
   */
  get maxUploadBytes(): number {
    return Math.min(this.#config.maxUploadBytes, this.#store.maxFileBytes ?? Infinity);
  }

  /** An invitation reader for one request (`InvitationReader`): each invitation read once, however often the request asks. */
  invitationsOnce(): InvitationReader {
    const read = new Map<string, Promise<Invitation | null>>();
    return (id) => {
      let found = read.get(id);
      if (!found) {
        found = this.#venues.invitationById(id);
        read.set(id, found);
        // A read that failed is tried again by the next step that asks.
        found.catch(() => read.delete(id));
      }
      return found;
    };
  }

  // ---- before the body is read -------------------------------------------------------------

  /**
   * After `UPLOAD_HUMAN_VERIFICATION_AFTER` uploads in the last hour, a further upload needs a
   * human-verification token in the `cf-turnstile-token` header. Answers what to call once the
   * upload is recorded or refused (`beginUpload`).
   */
  async allowUpload(viewer: Viewer, humanToken: string | undefined, address: string): Promise<() => void> {
    return this.admitUploader(viewer).counted ? this.beginUpload(viewer, humanToken, address) : () => undefined;
  }

  /**
   * Refuses an impersonation that may not write; otherwise says whether the caller's uploads
   * count against the hour's allowance (`beginUpload`; a chunked upload's first chunk only).
   */
  admitUploader(viewer: Viewer): { counted: boolean } {
    if (viewer.readOnly) throw new AppError('ForbiddenError', 'Data cannot be modified while impersonating');
    return { counted: this.#config.uploadHumanVerificationAfter > 0 };
  }

  /**
   * A counted upload begins: the hour's finished uploads, and those its person is beginning in
   * this process alongside, must be fewer than the allowance, or it needs a human-verification
   * token. It counts as begun from before the hour's uploads are read until the caller calls
   * what this answers, once the upload is recorded or refused: of uploads sent together, each
   * sees the ones before it (counting the finished ones alone let twenty at once all go without a
   * token). Uploads begun at once through several processes are each counted by their own.
   */
  async beginUpload(viewer: Viewer, humanToken: string | undefined, address: string): Promise<() => void> {
    const person = viewer.profileId;
    const alongside = this.#beginning.get(person) ?? 0;
    this.#beginning.set(person, alongside + 1);
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      const left = (this.#beginning.get(person) ?? 1) - 1;
      if (left > 0) this.#beginning.set(person, left);
      else this.#beginning.delete(person);
    };
    try {
      const finished = await this.#repo.recentUploadCount(person, this.#now() - 60 * 60 * 1000);
      if (finished + alongside >= this.#config.uploadHumanVerificationAfter) await this.verifyHuman(humanToken, address);
      return end;
    } catch (error) {
      end();
      throw error;
    }
  }

  verifyHuman(humanToken: string | undefined, address: string): Promise<void> {
    return this.#verifier.verify(humanToken, address);
  }

  /**
   * How many bytes the file part may have, from the fields that came before it: the field's
   * `maxSize` when the invitation and field are known, the server's ceiling otherwise (the
   * field's limit is then checked once the fields are all in).
   */
  async limitFor(kind: 'whole' | 'chunk', fields: Record<string, string>, invitations?: InvitationReader): Promise<number> {
    const ceiling = kind === 'chunk' ? this.#config.maxChunkBytes : this.maxUploadBytes;
    if (!fields.invitationId || !fields.name) return ceiling;
    const target = await this.target(fields.invitationId, fields.name, invitations).catch(() => null);
    return target ? Math.min(ceiling, target.maxBytes) : ceiling;
  }

  /** `GET /attachment/rules`: what a file for this field must be, for clients to check before sending. */
  async uploadRules(query: UploadRulesQuery): Promise<UploadRules> {
    const { param, maxBytes } = await this.target(query.invitationId, query.name);
    return {
      extensions: param.extensions?.map((e) => e.toLowerCase()) ?? null,
      maxBytes,
      maxUploadBytes: this.maxUploadBytes,
      maxChunkBytes: this.#config.maxChunkBytes,
    };
  }

  /** tus's creation (`tus.ts`): `PUT /attachment`'s checks of the fields and announced size; the stored extension and the limit. */
  async admit(viewer: Viewer, fields: { invitationId: string; name: string; filename: string }, size: number | null): Promise<{ extension: string; maxBytes: number }> {
    const { param, maxBytes, invitation } = await this.target(fields.invitationId, fields.name);
    await this.#notes.requireInvitee(invitation, viewer);
    const extension = this.extension(param, fields.filename);
    if (size !== null && size > maxBytes) throw AppError.tooLarge(tooLargeMessage(maxBytes), { path: 'file' });
    return { extension, maxBytes };
  }

  /** The invitation's file field an upload is for (every kind of upload): it must exist, be open, and be of type `file`. */
  async target(invitationId: string, name: string, invitations?: InvitationReader): Promise<{ param: FieldParam; maxBytes: number; invitation: Invitation }> {
    const invitation = await (invitations ? invitations(invitationId) : this.#venues.invitationById(invitationId));
    if (!invitation) throw new AppError('ValidationError', `Invitation Not Found: ${invitationId}`, { path: 'invitationId' });
    if (invitation.duedate !== undefined && this.#now() > invitation.duedate) {
      throw new AppError('ValidationError', `The invitation ${invitationId} is closed`, { path: 'invitationId' });
    }
    const param = ownField(invitation.form, name)?.value.param;
    if (!param || param.type !== 'file') {
      throw new AppError('ValidationError', `The invitation ${invitationId} has no file field ${name}`, { path: 'name' });
    }
    const maxBytes = param.maxSize !== undefined ? Math.min(Math.floor(param.maxSize * MB), this.#store.maxFileBytes ?? Infinity) : this.maxUploadBytes;
    return { param, maxBytes, invitation };
  }

  /** The extension a file is stored under: the file name's, which the field must allow. */
  extension(param: FieldParam, filename: string): string {
    const verdict = checkFileFor({ extensions: param.extensions, maxBytes: Infinity }, filename);
    if ('message' in verdict) throw new AppError('ValidationError', verdict.message, { path: 'file' });
    return verdict.extension;
  }

  /** The checks of a whole file: its size, a PDF's signature (tus's too, `tus.ts`). */
  checkContent(received: Pick<Received, 'size' | 'head'>, extension: string, maxBytes: number): void {
    if (received.size > maxBytes) {
      throw AppError.tooLarge(tooLargeMessage(maxBytes), { path: 'file' });
    }
    if (extension === 'pdf' && !received.head.subarray(0, PDF_SIGNATURE.length).equals(PDF_SIGNATURE)) {
      throw new AppError('ValidationError', 'The file is not a PDF: it does not start with %PDF-', { path: 'file' });
    }
  }

  /** Keeps a checked file under its content address and records it as the uploader's. */
  async keep(viewer: Viewer, received: Received, extension: string, invitation: string, field: string): Promise<string> {
    const url = await this.#store.keep(received, extension);
    await this.#repo.recordUpload({ profileId: viewer.profileId, invitation, field, url, size: received.size, sha1: received.sha1 }, this.#now());
    return url;
  }

  // ---- whole files -------------------------------------------------------------------------------

  /** `PUT /attachment`: checks the fields and the file, keeps it, answers its URL. */
  saveUpload(viewer: Viewer, request: UploadRequest, invitations?: InvitationReader): Promise<{ url: string }> {
    return this.counted('whole', request, () => this.#saveUpload(viewer, request, invitations));
  }

  /** Runs an upload request, counting it in the metrics: its file's bytes and how it ended. */
  async counted<T>(kind: 'whole' | 'chunk', request: UploadRequest, work: () => Promise<T>): Promise<T> {
    const bytes = request.file?.size ?? 0;
    try {
      const answer = await work();
      this.#metrics?.upload(kind, bytes, 'ok');
      return answer;
    } catch (error) {
      this.#metrics?.upload(kind, bytes, error instanceof AppError && error.status < 500 ? 'refused' : 'error');
      throw error;
    }
  }

  async #saveUpload(viewer: Viewer, request: UploadRequest, invitations?: InvitationReader): Promise<{ url: string }> {
    const file = request.file;
    try {
      const fields = parseOrThrow(UploadFields, request.fields);
      if (!file) throw new AppError('MissingRequiredError', 'The property file is required', { path: 'file' });
      const { param, maxBytes, invitation } = await this.target(fields.invitationId, fields.name, invitations);
      // A file is for a note: only those who may post to the invitation may send one for it.
      await this.#notes.requireInvitee(invitation, viewer);
      const extension = this.extension(param, file.filename);
      this.checkContent(file, extension, maxBytes);
      return { url: await this.keep(viewer, file, extension, fields.invitationId, fields.name) };
    } finally {
      if (file) await removeQuietly(file.path);
    }
  }
}
