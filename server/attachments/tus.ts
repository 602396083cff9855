/**
 * Uploads through tus 1.0 (`/attachment/tus`, the HTTP side in `http/tus.ts`), on the pipeline
 * every upload goes through: the checks of `PUT /attachment` before a byte is read
 * (`UploadsService.admit`), the store's chunks for the bytes, and at the last byte the file kept
 * under its content address and recorded as the uploader's.
 *
 * - An upload is its person's, not its session's: a refreshed token carries on, and another
 *   person's token finds nothing (404).
 * - Each PATCH's bytes become one chunk of the store (`parts`, from 1), kept only once whole and,
 *   with `Upload-Checksum`, only when the checksum matches (460 otherwise). A PATCH cut by a
 *   dropped connection keeps what arrived (without a checksum), so a client resumes where the
 *   bytes stopped. The offset and the parts are in the database: any process answers any request.
 * - One request writes an upload at a time: a lease in its row (`writer`), taken only at the
 *   offset the request names; a second writer gets 423, a stale offset 409.
 * - The bytes are hashed as they arrive (a running SHA-1 per upload in the process that received
 *   them in order); the assembly then only links or concatenates, and hashes what it was not given.
 * - On the local disk every PATCH after an upload's first is written at its offset into the
 *   upload's data file, which becomes the stored file: no copy. On S3 PATCHes of at least 5 MiB
 *   are the parts of the upload's own multipart upload, which becomes the file (`tus-spans.ts`).
 * - Concatenation: partial uploads, each checked at creation like the final one, are assembled
 *   as the final upload straight from their chunks when it is created, and forgotten only once
 *   its file is kept. On the local disk they were written side by side into one file when they
 *   were created in the file's order (`tus-spans.ts`): no copy then; on S3 they were the parts
 *   of one multipart upload, which is then the file, read once for its SHA-1.
 * - A file sent whole in one request is kept as `PUT /attachment` keeps it: no chunk, no assembly.
 */
import { createHash, randomUUID, type Hash } from 'node:crypto';
import type { Logger } from 'pino';
import { AppError } from '../../shared/index.ts';
import type { Viewer } from '../accounts/viewer.ts';
import type { Config } from '../config.ts';
import type { Metrics } from '../metrics/events.ts';
import { refusedForARow, type Db } from '../../db/knex.ts';
import { PROCESS_OWNER, ownerIsGone } from './owners.ts';
import { AttachmentsRepository } from './repository.ts';
import { removeQuietly } from './store/disk.ts';
import type { Assembled, AssemblyPiece, ChunkSlot, FileStore, HashedPrefix, Received } from './store/file-store.ts';
import { finalKey, stateOf, type TusCreation, type TusState, type TusWrite } from './tus-requests.ts';
import { TusRepository, type TusUpload } from './tus-repository.ts';
import { bringsAnyByte, keptOnCut } from './kept-on-cut.ts';
import type { Turn } from './keyed-line.ts';
import { TusSpans } from './tus-spans.ts';
import { OPEN_UPLOADS_PER_PERSON, type UploadNotes, type UploadsService } from './uploads.ts';

/** How long a writing request holds its upload without renewing (it renews every third of it). */
const WRITER_LEASE_MS = 30_000;
/** The most requests one upload may be sent in (each is a chunk of the store, opened at its assembly). */
export const MAX_PARTS = 10_000;
/** The running hashes one process keeps, the oldest forgotten past it (its upload is then hashed at its assembly). */
const HASHES_KEPT = 1000;

/** An offset as an answer's message tells it: one past what a number holds (`bytesHeader`) as such. */
const offsetText = (offset: number) => (Number.isFinite(offset) ? String(offset) : 'more than 15 digits long');

/** A new upload's row, before any byte was kept. */
function newUpload(viewer: Viewer, creation: TusCreation, extension: string, now: number, expiresAt: number, shape: Pick<TusUpload, 'length' | 'offset' | 'concat' | 'concatHeader' | 'concatKey'>): TusUpload {
  const { fields, metadata } = creation;
  return { id: randomUUID(), profileId: viewer.profileId, invitation: fields.invitationId, field: fields.name, extension, metadata, parts: 0, spanAt: 0, span: null, spanPart: null, writer: null, writerUntil: null, url: null, createdAt: now, expiresAt, ...shape };
}

/** Past the open uploads' limit (429). */
function tooManyOpen(): AppError {
  return new AppError('TooManyError', `At most ${OPEN_UPLOADS_PER_PERSON} uploads may be unfinished at once: finish one, or end it (DELETE)`, { retryAfter: 60 });
}

/** A request's name in an upload's `writer`: its own id, then its process's (`owners.ts`), so a successor can tell it is gone. */
const newWriter = () => `${randomUUID()} ${PROCESS_OWNER}`;
const processOf = (writer: string | null) => writer?.split(' ')[1] ?? null;

export class TusService {
  readonly #db: Db;
  readonly #repo: TusRepository;
  readonly #uploads: UploadsService;
  readonly #notes: Pick<UploadNotes, 'requireAuthor'>;
  readonly #store: FileStore;
  readonly #config: Config;
  readonly #logger: Logger;
  readonly #metrics: Pick<Metrics, 'upload' | 'assembly'> | undefined;
  readonly #now: () => number;
  /** The running SHA-1 of uploads this process received in order: the parts it covers (at most `HASHES_KEPT`, the oldest forgotten). */
  readonly #hashes = new Map<string, { parts: number; hash: Hash }>();
  readonly #spans: TusSpans;

  constructor(deps: { db: Db; repo: TusRepository; uploads: UploadsService; notes: Pick<UploadNotes, 'requireAuthor'>; store: FileStore; config: Config; logger: Logger; metrics?: Pick<Metrics, 'upload' | 'assembly'>; now?: () => number }) {
    this.#db = deps.db;
    this.#repo = deps.repo;
    this.#uploads = deps.uploads;
    this.#notes = deps.notes;
    this.#store = deps.store;
    this.#config = deps.config;
    this.#logger = deps.logger;
    this.#metrics = deps.metrics;
    this.#now = deps.now ?? Date.now;
    this.#spans = new TusSpans(deps.repo, deps.store, this.#now);
  }

  /**
   * `POST /attachment/tus`: checks everything `PUT /attachment` checks, before any byte. Parts of
   * a parallel upload are checked like it but count against the hourly quota only through their
   * final upload (one human-verification token for the whole file), and every unfinished upload
   * against the person's `OPEN_UPLOADS_PER_PERSON`.
   */
  async create(viewer: Viewer, creation: TusCreation, humanToken: string | undefined, address: string): Promise<TusState> {
    if (creation.concat?.kind === 'partial') {
      if (viewer.readOnly) throw new AppError('ForbiddenError', 'Data cannot be modified while impersonating');
      return this.#create(viewer, creation);
    }
    // Counted as begun until its row is in: creations sent together each see those before them.
    const endBeginning = await this.#uploads.allowUpload(viewer, humanToken, address);
    try {
      return await this.#create(viewer, creation);
    } finally {
      endBeginning();
    }
  }

  async #create(viewer: Viewer, creation: TusCreation): Promise<TusState> {
    const now = this.#now();
    const expiresAt = now + this.#config.uploadAbandonSeconds * 1000;
    if (creation.concat?.kind === 'final') return this.#concatenate(viewer, creation, creation.concat, expiresAt);
    // The count and the row one creation after another (`inTurn`), and counted again with the
    // row in, for creations sent at once through other processes.
    const upload = await this.#uploads.inTurn(viewer.profileId, async () => {
      if ((await this.#repo.openCount(viewer.profileId)) >= OPEN_UPLOADS_PER_PERSON) throw tooManyOpen();
      const { extension } = await this.#uploads.admit(viewer, creation.fields, creation.length);
      const made = newUpload(viewer, creation, extension, now, expiresAt, { length: creation.length, offset: 0, concat: creation.concat?.kind ?? null, concatHeader: null, concatKey: null });
      await (made.concat === 'partial' ? this.#spans.create(made) : this.#repo.create(made));
      if ((await this.#repo.openCount(viewer.profileId)) > OPEN_UPLOADS_PER_PERSON) {
        await this.#forget(made.id);
        throw tooManyOpen();
      }
      return made;
    });
    // Nothing to send (an empty file): complete at once, as a client that sends no PATCH expects.
    if (creation.length === 0 && upload.concat === null) return this.#finishNow(viewer, upload);
    return stateOf(upload);
  }

  /**
   * For a partial upload's creation (`Upload-Concat: partial`), a place in line taken now, before
   * the request awaits anything, in which to run `create` (see `TusSpans.line`); null for others.
   * `credential`: the session the request carries, not yet checked (kept only as its SHA-256),
   * so that requests with another person's never wait in this line; those with none share one,
   * and are refused at once.
   */
  creationTurn(concat: string | undefined, metadata: string | undefined, credential: string | undefined): Turn | null {
    if (concat?.trim() !== 'partial' || !metadata) return null;
    const who = credential ? createHash('sha256').update(credential).digest('base64url') : '';
    return this.#spans.line(`${who} ${metadata}`);
  }

  /**
   * `HEAD`: where the upload stands. A complete one whose last request was cut before its file
   * was kept is kept now, if its person may still author (a `Limited` profile: 403).
   */
  async head(viewer: Viewer, id: string): Promise<TusState> {
    const upload = await this.#own(viewer, id);
    const unkept = upload.url === null && upload.concat !== 'partial' && upload.length !== null && upload.offset === upload.length;
    if (!unkept || viewer.readOnly) return stateOf(upload);
    this.#notes.requireAuthor(viewer);
    return upload.concat === 'final' ? this.#finishFinal(viewer, upload) : this.#finishNow(viewer, upload);
  }

  /**
   * `PATCH`: the bytes at the upload's offset. Who may post to the invitation was checked at the
   * upload's creation; that the person may still author (not a `Limited` profile) is checked
   * with every `PATCH` that could add bytes, before any is read, as with every chunk of
   * `PUT /attachment/chunk`. A repeated `PATCH` of a complete upload at its end is answered as
   * before when it sends no bytes, and 413 when it does (they are past the upload's length).
   */
  async write(viewer: Viewer, id: string, request: TusWrite): Promise<TusState> {
    if (viewer.readOnly) throw new AppError('ForbiddenError', 'Data cannot be modified while impersonating');
    const upload = await this.#own(viewer, id);
    // Concatenation: a final upload is made of its parts, and takes no PATCH (MUST 403).
    if (upload.concat === 'final') throw new AppError('ForbiddenError', 'A final upload (Upload-Concat: final) is made of its parts and takes no PATCH');
    // Creation-defer-length: once known, the length "MUST NOT be changed"; the same value again changes nothing.
    if (request.length !== undefined && upload.length !== null && request.length !== upload.length) {
      throw new AppError('ValidationError', `Upload-Length is ${upload.length} already and cannot change`, { path: 'Upload-Length' });
    }
    if (upload.url !== null) {
      // Sent again without bytes (an empty body in chunks too, as @tus/server answers it): answered
      // as before. Bytes past a complete upload's length: 413, as past an unfinished one's.
      if (request.offset === upload.offset && (request.sendsBytes === 'chunked' ? await bringsAnyByte(request.body) : request.sendsBytes)) {
        throw AppError.tooLarge(`The upload is complete at ${upload.offset} bytes: no more may be sent`, { path: 'Upload-Offset' });
      }
      if (request.offset === upload.offset) return stateOf(upload);
      throw AppError.protocol('ValidationError', 409, `Upload-Offset is ${offsetText(request.offset)}, but the upload is complete at ${upload.offset}`, { path: 'Upload-Offset' });
    }
    this.#notes.requireAuthor(viewer);
    if (request.offset !== upload.offset) throw AppError.protocol('ValidationError', 409, `Upload-Offset is ${offsetText(request.offset)}, but the upload is at ${upload.offset}`, { path: 'Upload-Offset' });
    if (upload.parts >= MAX_PARTS) throw AppError.tooLarge(`An upload may be sent in at most ${MAX_PARTS} requests: start again with larger ones`, { path: 'Upload-Offset' });
    const writer = await this.#take(viewer, upload);
    const renewal = this.#renewing(upload.id, writer);
    let bytes = 0;
    let receivedAt: string | undefined;
    try {
      // The field's limit as it is now (the file name's extension was checked at creation).
      const maxBytes = await this.#uploads.limitFor('whole', { invitationId: upload.invitation, name: upload.field });
      let length = upload.length;
      if (length === null && request.length !== undefined) {
        if (request.length < upload.offset) throw new AppError('ValidationError', 'Upload-Length is less than what was sent already', { path: 'Upload-Length' });
        if (request.length > maxBytes) throw AppError.tooLarge(`The file may be at most ${maxBytes} bytes`, { path: 'Upload-Length' });
        // Set by another request since this one read the upload (which then left the offset where
        // it was): the length is the one set first, and this request learns where things stand.
        if (!(await this.#repo.setLength(upload.id, writer, request.length))) {
          throw AppError.protocol('ValidationError', 409, 'The upload\'s length was set by another request meanwhile: ask where it stands (HEAD)', { path: 'Upload-Length' });
        }
        length = request.length;
      }
      const received = await this.#receive(upload, request, (length ?? maxBytes) - upload.offset);
      receivedAt = received?.path;
      bytes = received?.size ?? 0;
      // The whole file in one request (tus-js-client's and Uppy's default): kept as PUT /attachment keeps it.
      if (received?.continued && upload.parts === 0 && upload.concat === null && length !== null && received.size === length) {
        const url = await this.#keepWhole(viewer, upload, writer, { ...received, sha1: received.continued.digest('hex') }, maxBytes);
        this.#metrics?.upload('tus', bytes, 'ok');
        return { ...stateOf(upload), length, offset: length, url };
      }
      // A request that lost its lease (it stalled past it, and another took the upload over) keeps nothing.
      if (received && !(await this.#repo.renew(upload.id, writer, this.#now() + WRITER_LEASE_MS))) {
        await removeQuietly(received.path);
        throw AppError.protocol('ValidationError', 409, 'The upload was taken over by another request meanwhile', { path: 'Upload-Offset' });
      }
      // On S3 the bytes may go into a multipart upload instead: a parallel upload's part into its
      // span's, an ordinary upload's into its own (`tus-spans.ts`).
      const inSpan = received !== null && (upload.concat === 'partial' ? await this.#spans.keep(upload, received) : await this.#spans.keepOwn(upload, received, upload.parts + 1));
      const parts = inSpan ? upload.parts + 1 : received ? await this.#keepPart(upload, received) : upload.parts;
      const offset = upload.offset + bytes;
      const expiresAt = received ? this.#now() + this.#config.uploadAbandonSeconds * 1000 : upload.expiresAt;
      if (!(await this.#repo.release(upload.id, writer, received && { offset, parts, expiresAt }))) {
        throw AppError.protocol('ValidationError', 409, 'The upload was ended meanwhile', { path: 'Upload-Offset' });
      }
      if (received?.continued && !inSpan) this.#remember(upload.id, parts, received.continued);
      this.#metrics?.upload('tus', bytes, 'ok');
      const after: TusUpload = { ...upload, length, offset, parts, expiresAt };
      if (upload.concat === 'partial' || length === null || offset !== length) return stateOf(after);
      return this.#finishNow(viewer, after);
    } catch (error) {
      this.#metrics?.upload('tus', bytes, error instanceof AppError && error.status < 500 ? 'refused' : 'error');
      // The bytes received, unless they were kept already (moved or linked into place: then nothing is there).
      if (receivedAt) await removeQuietly(receivedAt);
      await this.#repo.release(upload.id, writer, null).catch(() => undefined);
      throw error;
    } finally {
      clearInterval(renewal);
    }
  }

  /** `DELETE` (termination): the upload and its bytes are gone; its URL answers 404 from now on. */
  async terminate(viewer: Viewer, id: string): Promise<void> {
    if (viewer.readOnly) throw new AppError('ForbiddenError', 'Data cannot be modified while impersonating');
    const upload = await this.#own(viewer, id);
    // A request writing the upload holds its lease until it ends: ended under it, the upload
    // would lose its row while that request keeps its file. The DELETE waits its turn (423), as
    // a second PATCH does.
    await this.#forget(upload.id, { unlessWritten: true });
  }

  /** The sweeper's: unfinished uploads past their expiry go with their bytes; finished ones are forgotten then too. */
  async sweep(): Promise<number> {
    const now = this.#now();
    const expired = await this.#repo.expired(now);
    for (const id of expired) await this.#forget(id);
    for (const id of await this.#repo.finishedBefore(now)) await this.#repo.remove(id);
    await this.#spans.sweep();
    return expired.length;
  }

  /** The caller's upload, live: another person's, an unknown, a terminated or an expired one (finished or not) is a 404. */
  async #own(viewer: Viewer, id: string): Promise<TusUpload> {
    const upload = /^[0-9a-f-]{36}$/.test(id) ? await this.#repo.findOf(viewer.profileId, id) : null;
    if (upload && (upload.expiresAt >= this.#now() || upload.writer !== null)) return upload;
    // Expired, as the sweep would have it: an unfinished upload goes with its bytes, a finished one's URL is forgotten.
    if (upload?.url === null) await this.#forget(upload.id);
    else if (upload) await this.#repo.remove(upload.id);
    throw new AppError('NotFoundError', `Upload Not Found: ${id}`, { path: 'id' });
  }

  /**
   * The upload's lease for one request, at its offset: free, run out, or left by a process of
   * this kernel that stopped (taken at once: a client retrying after a crash must not wait for
   * the lease to run out). Otherwise 423 while another request writes it, 409 once it moved on.
   */
  async #take(viewer: Viewer, upload: TusUpload): Promise<string> {
    const { writer, current } = await this.#lease(viewer, upload);
    if (writer !== null) return writer;
    if (current?.offset !== upload.offset || current.url !== null) {
      throw AppError.protocol('ValidationError', 409, 'The upload moved on meanwhile: ask where it stands (HEAD) and go on from there', { path: 'Upload-Offset' });
    }
    throw AppError.protocol('BadRequestError', 423, 'Another request is writing this upload', { retryAfter: 1 });
  }

  /**
   * The upload's lease at its offset, free, run out, or left by a stopped process of this kernel
   * (taken over at once: writing, or keeping the complete file, which a crash may have cut); or
   * no writer, and the row as it stands, while a live request holds it or it moved on.
   */
  async #lease(viewer: Viewer, upload: TusUpload): Promise<{ writer: string | null; current: TusUpload | null }> {
    const writer = newWriter();
    const now = this.#now();
    if (await this.#repo.take(upload.id, upload.offset, writer, now, now + WRITER_LEASE_MS)) return { writer, current: upload };
    const current = await this.#repo.findOf(viewer.profileId, upload.id);
    const held = current?.offset === upload.offset && current.url === null ? current.writer : null;
    const gone = held !== null && processOf(held) !== PROCESS_OWNER && ownerIsGone(processOf(held));
    if (gone && (await this.#repo.takeOver(upload.id, held, writer, now + WRITER_LEASE_MS))) return { writer, current };
    return { writer: null, current };
  }

  #renewing(id: string, writer: string): NodeJS.Timeout {
    return setInterval(() => void this.#repo.renew(id, writer, this.#now() + WRITER_LEASE_MS).catch(() => undefined), WRITER_LEASE_MS / 3);
  }

  async #forget(id: string, opts: { unlessWritten?: boolean } = {}): Promise<void> {
    // On S3 a span's multipart upload goes with its last upload (an ordinary upload's own, with it).
    const span = this.#store.dropSpan ? ((await this.#repo.spanOf(id)) ?? id) : null;
    if (!opts.unlessWritten) await this.#repo.remove(id);
    else if (!(await this.#repo.removeUnlessWritten(id, this.#now()))) {
      throw AppError.protocol('BadRequestError', 423, 'A request is writing this upload: end it once that request has', { retryAfter: 1 });
    }
    this.#hashes.delete(id);
    await this.#store.removeChunks(id);
    // The upload is gone already: what its span left in the store goes now, or with the sweep.
    if (span) await this.#spans.forgotten(span).catch((error: unknown) => this.#logger.warn({ err: error, span }, 'a span\'s multipart upload is left for the sweep'));
  }

  /**
   * The running SHA-1 of an upload's `parts` parts, if this process hashed them all as they
   * arrived: the first `parts` chunks of an assembly. A copy: the assembly feeds the rest into it
   * and digests it, and a retried assembly (after a failure) must start again from the parts.
   */
  #hashedPrefix(upload: TusUpload, parts: number): HashedPrefix | undefined {
    const running = this.#hashes.get(upload.id);
    return running && running.parts === parts && parts > 0 ? { chunks: parts, hash: running.hash.copy() } : undefined;
  }

  #remember(id: string, parts: number, hash: Hash): void {
    this.#hashes.delete(id);
    this.#hashes.set(id, { parts, hash });
    if (this.#hashes.size > HASHES_KEPT) this.#hashes.delete(this.#hashes.keys().next().value as string);
  }

  /**
   * A PATCH's body into this machine's temporary folder, hashed as it arrives (continuing the
   * upload's running SHA-1 when this process has it) and checked against its checksum. Of a
   * parallel upload's parts only the first of a span is hashed so (its hash is the file's start);
   * the others are hashed at the assembly, as SHA-1 cannot join hashes of pieces. Null when
   * nothing is to be kept: no byte came, or a cut body that had a checksum (it cannot be checked).
   */
  async #receive(upload: TusUpload, request: TusWrite, room: number): Promise<Received | null> {
    const running = this.#hashes.get(upload.id);
    const hashing = upload.concat !== 'partial' || upload.spanAt === 0;
    const continues = !hashing ? undefined : upload.parts === 0 ? createHash('sha1') : running?.parts === upload.parts ? running.hash.copy() : undefined;
    const check = request.checksum ? createHash(request.checksum.algorithm) : null;
    const slot = await this.#slot(upload, room);
    const { stream, cut } = keptOnCut(request.body);
    if (check) stream.on('data', (piece: Buffer) => check.update(piece));
    const received = await this.#store.receive(stream, room, { ...(continues ? { continueHash: continues } : { hash: false }), ...(slot ? { slot } : {}) });
    // A body cut short cannot be checked, and keeps nothing; a whole one is checked, an empty one too.
    const whole = !(cut() && check);
    const keep = received.size > 0 && whole;
    if (whole && check && request.checksum && !check.digest().equals(request.checksum.digest)) {
      await removeQuietly(received.path);
      throw AppError.protocol('ValidationError', 460, `The ${request.checksum.algorithm} checksum of the bytes sent does not match Upload-Checksum: they were not kept`, { path: 'Upload-Checksum' });
    }
    if (!keep) {
      await removeQuietly(received.path);
      return null;
    }
    return received;
  }

  /**
   * On the local disk a PATCH's bytes go straight to their place in the upload's data file, but
   * for an ordinary upload's first part: it becomes that file (`#keepPart`), or the stored file
   * itself when it is the whole file. Claimed before the body is read from (the checksum's
   * listener sets it flowing), and only by the lease's holder, so a part left by a request that
   * stopped before it counted it is never this part's and goes first. Null: received apart (the
   * store has no places, another request still holds this one, or a part was kept apart before,
   * see `LocalFileStore.slotAt`).
   */
  async #slot(upload: TusUpload, room: number): Promise<ChunkSlot | null> {
    if (!this.#store.slotAt || (upload.parts === 0 && upload.concat !== 'partial')) return null;
    await this.#store.removeChunk(upload.id, upload.parts + 1);
    return this.#store.slotAt(upload.id, upload.parts + 1, upload.spanAt + upload.offset, room);
  }

  /** Stores a received PATCH as the upload's next part; answers the upload's part count. */
  async #keepPart(upload: TusUpload, received: Received): Promise<number> {
    const index = upload.parts + 1;
    // Left by a request that stopped before it counted its part: never this part's bytes.
    await this.#store.removeChunk(upload.id, index);
    // The first part of an ordinary upload may become its data file (the local disk), so a file
    // sent in one request is stored without a copy.
    await this.#store.keepChunk(received, upload.id, index, { origin: index === 1 && upload.concat === null });
    if (!received.continued) this.#hashes.delete(upload.id);
    return index;
  }

  /**
   * A file that came whole in one request: checked as a whole file is, stored under its content
   * address straight from where it was received (no chunk, no assembly: one write on S3, a link
   * on the local disk), and recorded with the upload's end in one transaction.
   */
  async #keepWhole(viewer: Viewer, upload: TusUpload, writer: string, received: Received, maxBytes: number): Promise<string> {
    try {
      this.#uploads.checkContent(received, upload.extension, maxBytes);
    } catch (error) {
      await removeQuietly(received.path);
      await this.#forget(upload.id);
      this.#metrics?.assembly('refused');
      throw error;
    }
    const url = await this.#store.keep(received, upload.extension);
    return this.#recorded(viewer, upload, writer, { url, size: received.size, sha1: received.sha1 });
  }

  /** Records a kept file as the uploader's and ends the upload, in one transaction, by the lease's holder only. */
  async #recorded(viewer: Viewer, upload: TusUpload, writer: string, file: { url: string; size: number; sha1: string }): Promise<string> {
    const record = { profileId: viewer.profileId, invitation: upload.invitation, field: upload.field, ...file };
    const expiresAt = this.#now() + this.#config.uploadAbandonSeconds * 1000;
    const finished = await this.#db.transaction(async (trx) => {
      if (!(await new TusRepository(trx).finish(upload.id, writer, file, expiresAt))) return false;
      await new AttachmentsRepository(trx).recordUpload(record, this.#now());
      return true;
    });
    if (!finished) {
      // The lease ran out and another request kept the file: its answer is the same file.
      const current = await this.#repo.findOf(viewer.profileId, upload.id);
      if (current?.url) return current.url;
      // Ended meanwhile (its lease ran out, and it expired or was ended): the kept file stays
      // unrecorded, as after a crash (its address names its content, which others may hold).
      throw new AppError('NotFoundError', `Upload Not Found: ${upload.id}`, { path: 'id' });
    }
    this.#hashes.delete(upload.id);
    await this.#store.removeChunks(upload.id);
    // The file is kept and recorded: a store that fails to let go of the multipart upload's object now leaves it to the sweep.
    await this.#spans.kept(upload.id).catch((error: unknown) => this.#logger.warn({ err: error, uploadId: upload.id }, 'a kept upload\'s multipart object is left for the sweep'));
    this.#metrics?.assembly('done');
    this.#logger.info({ uploadId: upload.id, size: file.size }, 'tus upload stored');
    return file.url;
  }

  /** Takes the upload's lease (it is complete: nobody else may write it) and keeps its file. */
  async #finishNow(viewer: Viewer, upload: TusUpload): Promise<TusState> {
    const { writer, current } = await this.#lease(viewer, upload);
    // Another request is keeping it: its answer has the URL; this one says where it stands.
    if (writer === null) return stateOf(current ?? upload);
    // Its chunks, or on S3 the parts sent to its own multipart upload (`TusSpans.keepOwn`).
    const pieces = await this.#leased(upload.id, writer, () => this.#spans.ownPieces(upload));
    return { ...stateOf(upload), url: await this.#finish(viewer, upload, writer, pieces) };
  }

  /** Work done under the upload's lease before its assembly (settling its spans on S3), renewing it; on failure the lease is let go. */
  async #leased<T>(id: string, writer: string, work: () => Promise<T>): Promise<T> {
    const renewal = this.#renewing(id, writer);
    try {
      return await work();
    } catch (error) {
      await this.#repo.release(id, writer, null).catch(() => undefined);
      throw error;
    } finally {
      clearInterval(renewal);
    }
  }

  /**
   * The upload's chunks as its stored file: assembled (hashing only what was not hashed as it
   * arrived), checked as a whole file is, kept under its content address, and recorded as the
   * uploader's in one transaction with the upload's end, by the lease's holder only. A file
   * refused as a whole ends the upload; any other failure leaves it complete for a later HEAD.
   */
  async #finish(viewer: Viewer, upload: TusUpload, writer: string, chunks: AssemblyPiece[], hashed = this.#hashedPrefix(upload, upload.parts)): Promise<string> {
    const renewal = this.#renewing(upload.id, writer);
    let assembled: Assembled | null = null;
    try {
      const maxBytes = upload.length ?? this.#uploads.maxUploadBytes;
      // What was hashed as it arrived counts only for chunks, never for what a multipart upload holds.
      const prefix = hashed && hashed.chunks <= chunks.length && chunks.slice(0, hashed.chunks).every((chunk) => typeof chunk === 'number' || !('span' in chunk));
      assembled = await this.#store.assemble(upload.id, chunks, maxBytes, prefix ? hashed : undefined);
      if (assembled.size !== upload.length) throw new AppError('ValidationError', `The upload holds ${assembled.size} bytes, not its Upload-Length ${upload.length}: send it again`, { path: 'Upload-Length' });
      this.#uploads.checkContent(assembled, upload.extension, maxBytes);
      const file = assembled;
      const url = await this.#store.keepAssembled(file, upload.extension);
      assembled = null;
      return await this.#recorded(viewer, upload, writer, { url, size: file.size, sha1: file.sha1 });
    } catch (error) {
      this.#metrics?.assembly(error instanceof AppError ? 'refused' : 'error');
      if (assembled) await this.#store.discard(assembled).catch(() => undefined);
      if (error instanceof AppError) await this.#forget(upload.id);
      else await this.#repo.release(upload.id, writer, null).catch(() => undefined);
      throw error;
    } finally {
      clearInterval(renewal);
    }
  }

  /**
   * A final upload (concatenation): the caller's complete partial uploads for the same field, in
   * the order given, assembled as its file straight from their chunks. Its row is written first,
   * naming its parts (`Upload-Concat`), and the parts are forgotten only once the file is kept:
   * a final upload cut by a crash is kept by the next HEAD, or by the client's repeated POST,
   * which answers the same final upload; so do POSTs sent at once (one row per person and list
   * of parts, `finalKey`, migration `20261129220000_tus_final_once`).
   */
  async #concatenate(viewer: Viewer, creation: TusCreation, concat: { ids: string[]; header: string }, expiresAt: number): Promise<TusState> {
    const key = finalKey(concat.ids);
    const existing = await this.#repo.findFinal(viewer.profileId, key, concat.header);
    if (existing) return this.#sameFinal(viewer, existing);
    let partials: TusUpload[];
    try {
      partials = await this.#partials(viewer, creation, concat.ids);
    } catch (error) {
      // Its parts forgotten by a request that kept this final upload meanwhile: that upload.
      const made = await this.#repo.findFinal(viewer.profileId, key);
      if (made) return this.#sameFinal(viewer, made);
      throw error;
    }
    const length = partials.reduce((sum, part) => sum + (part.length ?? 0), 0);
    const { extension } = await this.#uploads.admit(viewer, creation.fields, length);
    const now = this.#now();
    const upload = newUpload(viewer, creation, extension, now, expiresAt, { length, offset: length, concat: 'final', concatHeader: concat.header, concatKey: key });
    await this.#spans.close(partials);
    try {
      await this.#repo.create(upload);
    } catch (error) {
      // Another request wrote this final upload first: the same answer as a POST sent again.
      const first = refusedForARow(error) ? await this.#repo.findFinal(viewer.profileId, key) : null;
      if (!first) throw error;
      return this.#sameFinal(viewer, first);
    }
    await this.#repo.complete(upload.id, length);
    // Through `#sameFinal`: a POST sent at the same time may have found the row and be keeping it.
    return this.#sameFinal(viewer, upload);
  }

  /**
   * A POST naming a final upload that exists: its state, once kept or while another request
   * keeps it (which a HEAD then follows); otherwise this request keeps it (one cut by a crash).
   */
  async #sameFinal(viewer: Viewer, existing: TusUpload): Promise<TusState> {
    if (existing.url) return stateOf(existing);
    this.#notes.requireAuthor(viewer);
    try {
      return await this.#finishFinal(viewer, existing);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      // Being kept by another request (423), or kept by it meanwhile, its parts forgotten.
      const now = await this.#repo.findOf(viewer.profileId, existing.id);
      if (now && (now.url || error.status === 423)) return stateOf(now);
      throw error;
    }
  }

  /** Keeps a final upload's file from its parts' chunks, then forgets the parts. */
  async #finishFinal(viewer: Viewer, upload: TusUpload): Promise<TusState> {
    const ids = (upload.concatHeader ?? '').replace(/^final;/, '').trim().split(/\s+/).map((url) => /([0-9a-f-]{36})\/?$/.exec(url)?.[1] ?? '');
    const partials = await Promise.all(ids.map((id) => this.#repo.findOf(viewer.profileId, id)));
    if (partials.some((part) => part === null)) throw new AppError('ValidationError', 'A part of this upload is gone: send the file again', { path: 'Upload-Concat' });
    const { writer } = await this.#lease(viewer, upload);
    if (writer === null) throw AppError.protocol('BadRequestError', 423, 'This upload is being kept by another request', { retryAfter: 1 });
    const chunks = await this.#leased(upload.id, writer, () => this.#spans.pieces(partials as TusUpload[]));
    // The first part's bytes were hashed as they arrived when this process received them in order
    // and they are its chunks (a part kept in its span's multipart upload is hashed as read from it).
    const first = (partials as TusUpload[])[0]!;
    const ownChunks = first.parts > 0 && chunks.slice(0, first.parts).every((chunk) => typeof chunk === 'object' && 'uploadId' in chunk && chunk.uploadId === first.id);
    const url = await this.#finish(viewer, { ...upload, parts: chunks.length }, writer, chunks, ownChunks ? this.#hashedPrefix(first, first.parts) : undefined);
    for (const part of partials as TusUpload[]) await this.#forget(part.id);
    return { ...stateOf(upload), url };
  }

  /** The parts a final upload names: the caller's, complete, for its field, each once. */
  async #partials(viewer: Viewer, creation: TusCreation, ids: string[]): Promise<TusUpload[]> {
    if (ids.length === 0) throw new AppError('ValidationError', 'Upload-Concat: final names no partial upload', { path: 'Upload-Concat' });
    const partials: TusUpload[] = [];
    for (const partId of ids) {
      const part = await this.#own(viewer, partId);
      if (part.concat !== 'partial') throw new AppError('ValidationError', `${partId} is not a partial upload`, { path: 'Upload-Concat' });
      if (part.length === null || part.offset !== part.length || part.writer !== null) throw new AppError('ValidationError', `The partial upload ${partId} is not complete`, { path: 'Upload-Concat' });
      if (part.invitation !== creation.fields.invitationId || part.field !== creation.fields.name) {
        throw new AppError('ValidationError', `The partial upload ${partId} is for another field`, { path: 'Upload-Concat' });
      }
      if (partials.some((p) => p.id === part.id)) throw new AppError('ValidationError', `The partial upload ${partId} is named twice`, { path: 'Upload-Concat' });
      partials.push(part);
    }
    return partials;
  }
}
