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
 * - Concatenation: partial uploads, each checked at creation like the final one, become the final
 *   upload's chunks by a move inside the store (a rename on disk, a copy inside the bucket), and
 *   the final upload is assembled when it is created.
 */
import { createHash, randomUUID, type Hash } from 'node:crypto';
import { PassThrough, type Readable } from 'node:stream';
import type { Logger } from 'pino';
import { AppError } from '../../shared/index.ts';
import type { Viewer } from '../accounts/viewer.ts';
import type { Config } from '../config.ts';
import type { Metrics } from '../metrics/events.ts';
import { removeQuietly } from './store/disk.ts';
import type { Assembled, FileStore, Received } from './store/file-store.ts';
import type { TusRepository, TusUpload } from './tus-repository.ts';
import type { UploadsService } from './uploads.ts';

/** How long a writing request holds its upload without renewing (it renews every third of it). */
const WRITER_LEASE_MS = 30_000;

/** The fields an upload is for, from its `Upload-Metadata`. */
export interface TusFields {
  invitationId: string;
  name: string;
  filename: string;
}

export type TusConcat = { kind: 'partial' } | { kind: 'final'; ids: string[]; header: string } | null;

/** What a creation asks for (the HTTP side has parsed and checked the headers' syntax). */
export interface TusCreation {
  /** Null: deferred (`Upload-Defer-Length: 1`); a final upload's is the sum of its parts'. */
  length: number | null;
  metadata: string;
  fields: TusFields;
  concat: TusConcat;
}

/** Where an upload stands, as HEAD and every answer tell it. */
export interface TusState {
  id: string;
  offset: number;
  length: number | null;
  metadata: string;
  /** `partial`, or a final upload's `final;` and its parts' URLs. */
  concat: string | null;
  expiresAt: number;
  /** The stored file's URL once complete (`Attachment-Url`). */
  url: string | null;
}

/** A PATCH: the offset it names, a deferred length it may set, its body, and its checksum. */
export interface TusWrite {
  offset: number;
  length?: number;
  body: Readable;
  checksum?: { algorithm: 'sha1' | 'sha256' | 'md5'; digest: Buffer };
}

const stateOf = (u: TusUpload): TusState => ({ id: u.id, offset: u.offset, length: u.length, metadata: u.metadata, concat: u.concatHeader ?? u.concat, expiresAt: u.expiresAt, url: u.url });

/** The stream a store receives a PATCH's body from: ends (rather than fails) when the client goes, so what arrived is kept. */
function keptOnCut(body: Readable): { stream: PassThrough; cut: () => boolean } {
  const stream = new PassThrough();
  let complete = false;
  let cut = false;
  body.pipe(stream, { end: false });
  body.once('end', () => {
    complete = true;
    stream.end();
  });
  body.once('close', () => {
    if (complete) return;
    cut = true;
    body.unpipe(stream);
    stream.end();
  });
  body.once('error', () => undefined);
  return { stream, cut: () => cut };
}

export class TusService {
  readonly #repo: TusRepository;
  readonly #uploads: UploadsService;
  readonly #store: FileStore;
  readonly #config: Config;
  readonly #logger: Logger;
  readonly #metrics: Pick<Metrics, 'upload' | 'assembly'> | undefined;
  readonly #now: () => number;
  /** The running SHA-1 of uploads this process received in order: the parts it covers. */
  readonly #hashes = new Map<string, { parts: number; hash: Hash }>();

  constructor(deps: { repo: TusRepository; uploads: UploadsService; store: FileStore; config: Config; logger: Logger; metrics?: Pick<Metrics, 'upload' | 'assembly'>; now?: () => number }) {
    this.#repo = deps.repo;
    this.#uploads = deps.uploads;
    this.#store = deps.store;
    this.#config = deps.config;
    this.#logger = deps.logger;
    this.#metrics = deps.metrics;
    this.#now = deps.now ?? Date.now;
  }

  /** `POST /attachment/tus`: checks everything `PUT /attachment` checks, before any byte. */
  async create(viewer: Viewer, creation: TusCreation, humanToken: string | undefined, address: string): Promise<TusState> {
    await this.#uploads.allowUpload(viewer, humanToken, address);
    const now = this.#now();
    const id = randomUUID();
    const expiresAt = now + this.#config.uploadAbandonSeconds * 1000;
    if (creation.concat?.kind === 'final') return this.#concatenate(viewer, id, creation, creation.concat, expiresAt);
    const { extension } = await this.#uploads.admit(viewer, creation.fields, creation.length);
    await this.#repo.create({
      id,
      profileId: viewer.profileId,
      invitation: creation.fields.invitationId,
      field: creation.fields.name,
      extension,
      metadata: creation.metadata,
      length: creation.length,
      concat: creation.concat?.kind ?? null,
      createdAt: now,
      expiresAt,
    });
    return { id, offset: 0, length: creation.length, metadata: creation.metadata, concat: creation.concat?.kind ?? null, expiresAt, url: null };
  }

  /** `HEAD`: where the upload stands. A complete one whose last request was cut before its file was kept is kept now. */
  async head(viewer: Viewer, id: string): Promise<TusState> {
    const upload = await this.#own(viewer, id);
    if (upload.url === null && upload.concat !== 'partial' && upload.length !== null && upload.offset === upload.length) {
      const writer = randomUUID();
      if (await this.#repo.take(upload.id, upload.offset, writer, this.#now(), this.#now() + WRITER_LEASE_MS)) {
        return { ...stateOf(upload), url: await this.#finish(viewer, upload, writer) };
      }
    }
    return stateOf(upload);
  }

  /** `PATCH`: the bytes at the upload's offset. */
  async write(viewer: Viewer, id: string, request: TusWrite): Promise<TusState> {
    const upload = await this.#own(viewer, id);
    if (upload.url !== null || upload.concat === 'final') {
      if (request.offset === upload.offset) return stateOf(upload);
      throw AppError.protocol('ValidationError', 409, `Upload-Offset is ${request.offset}, but the upload is complete at ${upload.offset}`, { path: 'Upload-Offset' });
    }
    if (request.offset !== upload.offset) throw AppError.protocol('ValidationError', 409, `Upload-Offset is ${request.offset}, but the upload is at ${upload.offset}`, { path: 'Upload-Offset' });
    const now = this.#now();
    const writer = randomUUID();
    if (!(await this.#repo.take(upload.id, upload.offset, writer, now, now + WRITER_LEASE_MS))) {
      const current = await this.#repo.findOf(viewer.profileId, id);
      if (current?.offset !== upload.offset) throw AppError.protocol('ValidationError', 409, 'The upload moved on meanwhile: ask where it stands (HEAD) and go on from there', { path: 'Upload-Offset' });
      throw AppError.protocol('BadRequestError', 423, 'Another request is writing this upload', { retryAfter: 1 });
    }
    const renewal = setInterval(() => void this.#repo.renew(upload.id, writer, this.#now() + WRITER_LEASE_MS).catch(() => undefined), WRITER_LEASE_MS / 3);
    let bytes = 0;
    try {
      // The field's limit as it is now (the file name's extension was checked at creation).
      const maxBytes = await this.#uploads.limitFor('whole', { invitationId: upload.invitation, name: upload.field });
      let length = upload.length;
      if (length === null && request.length !== undefined) {
        if (request.length < upload.offset) throw new AppError('ValidationError', 'Upload-Length is less than what was sent already', { path: 'Upload-Length' });
        if (request.length > maxBytes) throw AppError.tooLarge(`The file may be at most ${maxBytes} bytes`, { path: 'Upload-Length' });
        await this.#repo.setLength(upload.id, writer, request.length);
        length = request.length;
      }
      const received = await this.#receive(upload, request, (length ?? maxBytes) - upload.offset);
      bytes = received?.size ?? 0;
      const moved = received ? await this.#keepPart(upload, received) : null;
      const offset = upload.offset + bytes;
      const expiresAt = moved ? this.#now() + this.#config.uploadAbandonSeconds * 1000 : upload.expiresAt;
      if (!(await this.#repo.release(upload.id, writer, moved && { offset, parts: moved.parts, expiresAt }))) {
        throw AppError.protocol('ValidationError', 409, 'The upload was ended meanwhile', { path: 'Upload-Offset' });
      }
      const after: TusUpload = { ...upload, length, offset, parts: moved?.parts ?? upload.parts, expiresAt };
      this.#metrics?.upload('tus', bytes, 'ok');
      if (upload.concat === 'partial' || length === null || offset !== length) return stateOf(after);
      if (!(await this.#repo.take(upload.id, offset, writer, this.#now(), this.#now() + WRITER_LEASE_MS))) return stateOf(after);
      return { ...stateOf(after), url: await this.#finish(viewer, after, writer) };
    } catch (error) {
      this.#metrics?.upload('tus', bytes, error instanceof AppError && error.status < 500 ? 'refused' : 'error');
      await this.#repo.release(upload.id, writer, null).catch(() => undefined);
      throw error;
    } finally {
      clearInterval(renewal);
    }
  }

  /** `DELETE` (termination): the upload and its bytes are gone; its URL answers 404 from now on. */
  async terminate(viewer: Viewer, id: string): Promise<void> {
    const upload = await this.#own(viewer, id);
    await this.#forget(upload.id);
  }

  /** The sweeper's: unfinished uploads past their expiry go with their bytes; finished ones are forgotten then too. */
  async sweep(): Promise<number> {
    const now = this.#now();
    const expired = await this.#repo.expired(now);
    for (const id of expired) await this.#forget(id);
    for (const id of await this.#repo.finishedBefore(now)) await this.#repo.remove(id);
    return expired.length;
  }

  /** The caller's upload, live: another person's, an unknown, a terminated or an expired one is a 404. */
  async #own(viewer: Viewer, id: string): Promise<TusUpload> {
    const upload = /^[0-9a-f-]{36}$/.test(id) ? await this.#repo.findOf(viewer.profileId, id) : null;
    if (upload && upload.url === null && upload.expiresAt < this.#now()) await this.#forget(upload.id);
    else if (upload) return upload;
    throw new AppError('NotFoundError', `Upload Not Found: ${id}`, { path: 'id' });
  }

  async #forget(id: string): Promise<void> {
    this.#hashes.delete(id);
    await this.#repo.remove(id);
    await this.#store.removeChunks(id);
  }

  /**
   * A PATCH's body into this machine's temporary folder, hashed as it arrives (continuing the
   * upload's running SHA-1 when this process has it) and checked against its checksum. Null when
   * nothing is to be kept: no byte came, or a cut body that had a checksum (it cannot be checked).
   */
  async #receive(upload: TusUpload, request: TusWrite, room: number): Promise<Received | null> {
    const running = this.#hashes.get(upload.id);
    const continues = upload.parts === 0 ? createHash('sha1') : running?.parts === upload.parts ? running.hash.copy() : undefined;
    const check = request.checksum ? createHash(request.checksum.algorithm) : null;
    const { stream, cut } = keptOnCut(request.body);
    if (check) stream.on('data', (piece: Buffer) => check.update(piece));
    const received = await this.#store.receive(stream, room, continues ? { continueHash: continues } : { hash: false });
    const keep = received.size > 0 && !(cut() && check);
    if (keep && check && request.checksum && !check.digest().equals(request.checksum.digest)) {
      await removeQuietly(received.path);
      throw AppError.protocol('ValidationError', 460, `The ${request.checksum.algorithm} checksum of the bytes sent does not match Upload-Checksum: they were not kept`, { path: 'Upload-Checksum' });
    }
    if (!keep) {
      await removeQuietly(received.path);
      return null;
    }
    return received;
  }

  /** Stores a received PATCH as the upload's next part, and carries its running hash on. */
  async #keepPart(upload: TusUpload, received: Received): Promise<{ parts: number }> {
    const index = upload.parts + 1;
    // Left by a request that stopped before it counted its part: never this part's bytes.
    await this.#store.removeChunk(upload.id, index);
    // The first part of an ordinary upload may become its data file (the local disk), so a file
    // sent in one request is stored without a copy. Partial uploads' parts move to their final upload.
    await this.#store.keepChunk(received, upload.id, index, { origin: index === 1 && upload.concat === null });
    if (received.continued) this.#hashes.set(upload.id, { parts: index, hash: received.continued });
    else this.#hashes.delete(upload.id);
    return { parts: index };
  }

  /**
   * The upload's parts as its stored file: assembled (hashing only what was not hashed as it
   * arrived), checked as a whole file is, kept under its content address and recorded. Needs
   * the upload's lease (`writer`). A file refused as a whole ends the upload.
   */
  async #finish(viewer: Viewer, upload: TusUpload, writer: string): Promise<string> {
    let assembled: Assembled | null = null;
    try {
      const fields = { invitationId: upload.invitation, name: upload.field };
      const maxBytes = upload.length ?? this.#config.maxUploadBytes;
      const indexes = Array.from({ length: upload.parts }, (_, i) => i + 1);
      const running = this.#hashes.get(upload.id);
      const hashed = running?.parts === upload.parts ? { chunks: upload.parts, hash: running.hash } : undefined;
      assembled = await this.#store.assemble(upload.id, indexes, maxBytes, hashed);
      if (assembled.size !== upload.length) throw new Error(`assembled ${assembled.size} bytes, expected ${upload.length}`);
      this.#uploads.checkAssembled(assembled, upload.extension, maxBytes);
      const file = assembled;
      const url = await this.#store.keepAssembled(file, upload.extension);
      assembled = null;
      await this.#uploads.recordStored(viewer.profileId, { invitation: fields.invitationId, field: fields.name, url, size: file.size, sha1: file.sha1 });
      await this.#repo.finish(upload.id, writer, url);
      this.#hashes.delete(upload.id);
      await this.#store.removeChunks(upload.id);
      this.#metrics?.assembly('done');
      this.#logger.info({ uploadId: upload.id, size: file.size }, 'tus upload stored');
      return url;
    } catch (error) {
      this.#metrics?.assembly(error instanceof AppError ? 'refused' : 'error');
      if (assembled) await this.#store.discard(assembled).catch(() => undefined);
      if (error instanceof AppError) await this.#forget(upload.id);
      else await this.#repo.release(upload.id, writer, null).catch(() => undefined);
      throw error;
    }
  }

  /**
   * A final upload (concatenation): its parts, the caller's complete partial uploads for the same
   * field, in the order given, become its chunks, and it is kept at once.
   */
  async #concatenate(viewer: Viewer, id: string, creation: TusCreation, concat: { ids: string[]; header: string }, expiresAt: number): Promise<TusState> {
    const ids = concat.ids;
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
    const length = partials.reduce((sum, part) => sum + (part.length ?? 0), 0);
    const { extension } = await this.#uploads.admit(viewer, creation.fields, length);
    const now = this.#now();
    await this.#repo.create({ id, profileId: viewer.profileId, invitation: creation.fields.invitationId, field: creation.fields.name, extension, metadata: creation.metadata, length, concat: 'final', concatHeader: concat.header, createdAt: now, expiresAt });
    const writer = randomUUID();
    if (!(await this.#repo.take(id, 0, writer, now, now + WRITER_LEASE_MS))) throw new Error('a new final upload could not be taken');
    let parts = 0;
    for (const part of partials) {
      for (let index = 1; index <= part.parts; index += 1) {
        parts += 1;
        await this.#store.moveChunk({ uploadId: part.id, index }, { uploadId: id, index: parts });
      }
    }
    for (const part of partials) await this.#forget(part.id);
    await this.#repo.release(id, writer, { offset: length, parts, expiresAt });
    if (!(await this.#repo.take(id, length, writer, this.#now(), this.#now() + WRITER_LEASE_MS))) throw new Error('a final upload could not be taken back');
    const upload: TusUpload = { id, profileId: viewer.profileId, invitation: creation.fields.invitationId, field: creation.fields.name, extension, metadata: creation.metadata, length, offset: length, parts, concat: 'final', concatHeader: concat.header, writer, writerUntil: null, url: null, createdAt: now, expiresAt };
    return { ...stateOf(upload), url: await this.#finish(viewer, upload, writer) };
  }
}
