/**
 * Files sent in chunks (`PUT /attachment/chunk`, `GET /attachment/chunk/status`), with everything
 * that lets several requests and several processes share one upload: chunk arrivals and their
 * leases (arrivals.ts), running hashes (running-hashes.ts), the assembly and its lease, the
 * recovery at start of what a stop cut, and the sweep of abandoned uploads. Each chunk goes
 * through `UploadsService`'s checks (uploads.ts): the field, its extension, its limit, the
 * content of the whole once assembled.
 */
import { randomUUID, type Hash } from 'node:crypto';
import type { Logger } from 'pino';
import { AppError, ChunkFields, formatBytes, parseOrThrow, tooLargeMessage, type ChunkedUploadState } from '../../shared/index.ts';
import type { Viewer } from '../accounts/viewer.ts';
import type { Config } from '../config.ts';
import { ChunkArrivals } from './arrivals.ts';
import { LEASE_RENEW_MS, OTHER_PROCESS_POLL_MS, sleep, WAIT_FOR_OTHER_PROCESS_MS } from './lease-timing.ts';
import { newOwner, ownerIsGone } from './owners.ts';
import type { AttachmentsRepository, ChunkedUpload, UploadStanding } from './repository.ts';
import { RunningHashes } from './running-hashes.ts';
import { removeQuietly } from './store/disk.ts';
import type { Assembled, ChunkSlot, FileStore } from './store/file-store.ts';
import { OPEN_UPLOADS_PER_PERSON, type InvitationReader, type UploadMetrics, type UploadNotes, type UploadRequest, type UploadsService } from './uploads.ts';

/**
 * An assembly is a lease in the upload's row (`assembly_owner`, `updated_at`), renewed every
 * `LEASE_RENEW_MS` while it runs. One not renewed for `ASSEMBLY_LEASE_MS` was left by a process
 * that stopped, on whatever machine: the next chunk of it takes it over and assembles it. (One
 * whose holder is a stopped process of this kernel is taken over at once: see owners.ts.)
 */
const ASSEMBLY_LEASE_MS = 15_000;
/** Every chunk index of an upload, as its client counts (from 1 until it is known). */
function indexesOf(upload: ChunkedUpload): number[] {
  const base = upload.indexBase ?? 1;
  return Array.from({ length: upload.totalChunks }, (_, i) => i + base);
}

/** `{<chunkIndex>: "completed" | "missing"}` for every chunk of an upload, keyed as the client counts. */
function statusMap(indexes: number[], chunks: Map<number, number>): Record<string, 'missing' | 'completed'> {
  return Object.fromEntries(indexes.map((i) => [String(i), chunks.has(i) ? ('completed' as const) : ('missing' as const)]));
}

/** The answer to a chunk of an upload refused (its row deleted) while the chunk was on its way. */
const refusedMeanwhile = () => new AppError('ValidationError', 'This upload was refused meanwhile; start it again', { path: 'clientUploadId' });

/** Past the open uploads' limit (429). */
function tooManyOpen(): AppError {
  return new AppError('TooManyError', `At most ${OPEN_UPLOADS_PER_PERSON} chunked uploads may be unfinished at once: finish one, or wait until it is swept`, { retryAfter: 60 });
}

/**
 * Reads a person's chunked upload by the id their client gave it. One chunk request asks for it
 * twice (its place before the body is read, its checks after): `uploadsOnce` gives a reader that
 * reads it once, for one request. What may change while the body arrives (the upload refused,
 * finished or swept by another request) is decided by the chunk's record, which finds the row
 * gone or finished, and by the status read after it, as when the change comes a moment later.
 * With `againIfNone`, a row that was not there when first read is read again (another first
 * chunk sent alongside may have created it meanwhile).
 */
export type UploadReader = (profileId: string, clientUploadId: string, opts?: { againIfNone?: boolean }) => Promise<ChunkedUpload | null>;

export class ChunkedUploadsService {
  readonly #repo: AttachmentsRepository;
  readonly #store: FileStore;
  /** The checks every upload goes through, and keeping a file. */
  readonly #uploads: UploadsService;
  readonly #notes: UploadNotes;
  /** Who this service is when it holds an assembly's lease: one per service, so two in one process are two holders. */
  readonly #holder = newOwner();
  /**
   * The assemblies this service is doing, by upload id, each settling with its URL: a chunk of an
   * upload being assembled here waits for it without polling. Only a shortcut: what a chunk
   * answers is decided by the upload's row, which every process reads alike.
   */
  readonly #assembling = new Map<string, Promise<string>>();
  /** The chunk requests under way, noted where every process sees them. */
  readonly #arrivals: ChunkArrivals;
  /** What this service hashed of each upload's first chunks as they arrived. */
  readonly #hashes = new RunningHashes();
  readonly #config: Config;
  readonly #logger: Logger;
  readonly #metrics: UploadMetrics | undefined;
  readonly #now: () => number;

  constructor(deps: { repo: AttachmentsRepository; store: FileStore; uploads: UploadsService; notes: UploadNotes; config: Config; logger: Logger; metrics?: UploadMetrics; now?: () => number }) {
    this.#repo = deps.repo;
    this.#store = deps.store;
    this.#uploads = deps.uploads;
    this.#notes = deps.notes;
    this.#config = deps.config;
    this.#logger = deps.logger;
    this.#metrics = deps.metrics;
    this.#now = deps.now ?? Date.now;
    // Parts of this service rather than collaborators: the arrivals are held by its lease holder.
    this.#arrivals = new ChunkArrivals({ repo: deps.repo, holder: this.#holder, logger: deps.logger, now: this.#now });
  }

  /** An upload reader for one chunk request (`UploadReader`): the row read once, however often the request asks. */
  uploadsOnce(): UploadReader {
    const read = new Map<string, Promise<ChunkedUpload | null>>();
    return (profileId, clientUploadId, opts = {}) => {
      const key = `${profileId}\n${clientUploadId}`;
      let found = read.get(key);
      if (found && opts.againIfNone) return found.then((row) => row ?? this.#repo.findUploadOf(profileId, clientUploadId));
      if (!found) {
        found = this.#repo.findUploadOf(profileId, clientUploadId);
        read.set(key, found);
        // A read that failed is tried again by the next step that asks.
        found.catch(() => read.delete(key));
      }
      return found;
    };
  }

  /**
   * `GET /attachment/chunk/status`: the caller's chunked upload, so an interrupted client can
   * send only what is missing. Another person's upload of the same id does not exist for them.
   */
  async chunkedUpload(viewer: Viewer, clientUploadId: string): Promise<ChunkedUploadState> {
    const found = await this.#repo.findUploadWithChunks(viewer.profileId, clientUploadId);
    if (!found) throw new AppError('NotFoundError', `Upload Not Found: ${clientUploadId}`, { path: 'clientUploadId' });
    const { upload, chunks } = found;
    const indexes = indexesOf(upload);
    return {
      clientUploadId,
      totalChunks: upload.totalChunks,
      state: upload.status,
      ...(upload.url ? { url: upload.url } : {}),
      chunks: statusMap(indexes, chunks),
      chunkBytes: Object.fromEntries([...chunks].map(([index, size]) => [String(index), size])),
    };
  }


  /**
   * Notes a chunk request as under way as soon as its fields name the upload, before its body is
   * read (`saveChunk` is then given the answer, and stops counting it): the id to hand over, or
   * none when the fields do not name an upload (yet). `withdrawChunk` for a request that fails
   * before `saveChunk` takes it.
   */
  async announceChunk(viewer: Viewer, fields: Record<string, string>): Promise<string | undefined> {
    const named = ChunkFields.shape.clientUploadId.safeParse(fields.clientUploadId);
    if (!named.success) return undefined;
    const arrival = randomUUID();
    await this.#arrivals.arrive(arrival, viewer.profileId, named.data);
    return arrival;
  }

  /**
   * Whether the chunk's fields name an upload the caller has begun (its first chunk was accepted,
   * human verification included when its hour's allowance was spent): its further chunks are the
   * same upload, and are not checked again. openreview-web sends one Turnstile token with every
   * chunk of a file, and such a token is accepted once.
   */
  async begun(viewer: Viewer, fields: Record<string, string>, uploads: UploadReader = this.uploadsOnce()): Promise<boolean> {
    const named = ChunkFields.shape.clientUploadId.safeParse(fields.clientUploadId);
    return named.success && (await uploads(viewer.profileId, named.data)) !== null;
  }

  /**
   * Once a chunk's fields are in, before its bytes are read: a hash for its bytes to go into as
   * they arrive, when it continues its upload's running hash or begins one (`RunningHashes.handOut`).
   * Kept only once the chunk is stored (`saveChunk`); a chunk refused, or stored by another
   * request first, leaves the running hash as it was.
   */
  continueHash(viewer: Viewer, fields: Record<string, string>): Hash | undefined {
    const named = ChunkFields.shape.clientUploadId.safeParse(fields.clientUploadId);
    const index = /^\d{1,9}$/.test(fields.chunkIndex ?? '') ? Number(fields.chunkIndex) : null;
    if (!named.success || index === null) return undefined;
    return this.#hashes.handOut(viewer.profileId, named.data, index);
  }

  /**
   * Once a chunk's fields are in, before its bytes are read: its place in its upload's data file,
   * claimed for this request, when the store has one (the local disk) and the upload is the
   * caller's, under way, and its layout set by its first chunk. The bytes then go there as they
   * arrive, and nothing is copied at the assembly. They count only once `saveChunk` has checked
   * and stored the chunk (as a chunk received into a temporary file); a request refused or cut
   * gives the place up (`Received.path` is its claim).
   */
  async placeChunk(viewer: Viewer, fields: Record<string, string>, reading: { invitations?: InvitationReader; uploads?: UploadReader } = {}): Promise<ChunkSlot | undefined> {
    if (!this.#store.slotFor) return undefined;
    const named = ChunkFields.shape.clientUploadId.safeParse(fields.clientUploadId);
    const index = /^\d{1,9}$/.test(fields.chunkIndex ?? '') ? Number(fields.chunkIndex) : null;
    const total = /^\d{1,9}$/.test(fields.totalChunks ?? '') ? Number(fields.totalChunks) : null;
    if (!named.success || index === null || total === null || index > total) return undefined;
    const upload = await (reading.uploads ?? this.uploadsOnce())(viewer.profileId, named.data);
    if (!upload || upload.status !== 'receiving' || upload.totalChunks !== total) return undefined;
    // Only places that start within the field's limit: a refused chunk's bytes stay in its place
    // until the upload is finished or swept, so what an upload holds stays within what it may.
    const target = await this.#uploads.target(upload.invitation, upload.field, reading.invitations).catch(() => null);
    if (!target) return undefined;
    return (await this.#store.slotFor(upload.id, index, target.maxBytes)) ?? undefined;
  }

  async withdrawChunk(arrival: string): Promise<void> {
    await this.#arrivals.leave(arrival).catch((error: unknown) => this.#logger.error({ err: error }, 'chunk arrival not cleared'));
  }

  /**
   * `PUT /attachment/chunk`: keeps one chunk and answers the status of every chunk, or, for the
   * request that completes the set, assembles the file and answers its URL.
   *
   * Indices: the spec counts from 0, existing web clients from 1. Index 0 seen means 0-based,
   * index `totalChunks` seen means 1-based, both is a 400; until one is seen the status map is
   * keyed 1-based, as those clients expect.
   *
   * Who may post to the invitation is checked when an upload begins (its first request, which
   * creates it), as tus checks it at an upload's creation: its later chunks are the same
   * person's bytes for the same invitation and field, within the field's limit, and a file is
   * attached to a note only by `POST /notes`, which checks it again. That the person may still
   * author (not a `Limited` profile) is checked with every chunk (`Viewer.mayAuthor`, read with the session).
   */
  saveChunk(
    viewer: Viewer,
    request: UploadRequest,
    opts: { announced?: string | undefined; invitations?: InvitationReader; uploads?: UploadReader } = {},
  ): Promise<{ url: string } | Record<string, 'missing' | 'completed'>> {
    return this.#uploads.counted('chunk', request, () => this.#saveChunk(viewer, request, opts.announced, opts.invitations, opts.uploads ?? this.uploadsOnce()));
  }

  async #saveChunk(
    viewer: Viewer,
    request: UploadRequest,
    announced: string | undefined,
    invitations: InvitationReader | undefined,
    uploads: UploadReader,
  ): Promise<{ url: string } | Record<string, 'missing' | 'completed'>> {
    const file = request.file;
    const arrival = announced ?? randomUUID();
    let arrived = announced !== undefined;
    try {
      const fields = parseOrThrow(ChunkFields, request.fields);
      if (!file) throw new AppError('MissingRequiredError', 'The property file is required', { path: 'file' });
      if (fields.chunkIndex > fields.totalChunks) {
        throw new AppError('ValidationError', `chunkIndex must be at most totalChunks (${fields.totalChunks})`, { path: 'chunkIndex' });
      }
      const repo = this.#repo;
      // Noted in the database, where every process sees it, from the moment its fields were in
      // (`announceChunk`), or else from the moment its body is in, before the checks that read
      // the database: a chunk sent together with the last one is then waited for, whichever
      // process received it, even if its body is still arriving when the other completes the set.
      if (!arrived) {
        await this.#arrivals.arrive(arrival, viewer.profileId, fields.clientUploadId);
        arrived = true;
      }
      const { param, maxBytes, invitation } = await this.#uploads.target(fields.invitationId, fields.name, invitations);
      // The upload's row (read once per request: see `UploadReader`), there for every chunk but
      // its first, which creates it. Not there before the body: read again, as another first
      // chunk sent alongside may have created it meanwhile (it is not a new upload to count).
      const existing = await uploads(viewer.profileId, fields.clientUploadId, { againIfNone: true });
      // Who may post, when the upload begins; that the person may still author, with every chunk.
      if (existing) this.#notes.requireAuthor(viewer);
      else await this.#notes.requireInvitee(invitation, viewer);
      const now = this.#now();
      // Every chunk's file name must have an extension the field allows (the first one's is kept).
      const extension = this.#uploads.extension(param, file.filename);
      // How this chunk says its client counts: index 0 means from 0, index `totalChunks` from 1.
      const base = fields.chunkIndex === 0 ? 0 : fields.chunkIndex === fields.totalChunks ? 1 : null;
      // Each unfinished upload holds its chunks in the store until it is swept: one person keeps
      // at most OPEN_UPLOADS_PER_PERSON of them at a time. A new upload's count and row one after
      // another (`inTurn`), counted again with the row in for uploads begun at once through other
      // processes.
      let upload =
        existing ??
        (await this.#uploads.inTurn(viewer.profileId, async () => {
          // Another first chunk of this upload may have opened it while this one waited its turn.
          const opener = await repo.findUploadOf(viewer.profileId, fields.clientUploadId);
          if (opener) return opener;
          if ((await repo.openUploadCount(viewer.profileId)) >= OPEN_UPLOADS_PER_PERSON) throw tooManyOpen();
          const id = randomUUID();
          const opened = await repo.openUpload(
            { id, profileId: viewer.profileId, clientUploadId: fields.clientUploadId, invitation: fields.invitationId, field: fields.name, extension, totalChunks: fields.totalChunks, indexBase: base },
            now,
          );
          if (opened.id === id && (await repo.openUploadCount(viewer.profileId)) > OPEN_UPLOADS_PER_PERSON) {
            await this.#discard(opened);
            throw tooManyOpen();
          }
          return opened;
        }));
      if (upload.invitation !== fields.invitationId || upload.field !== fields.name || upload.totalChunks !== fields.totalChunks) {
        throw new AppError('ValidationError', 'totalChunks, invitationId and name must stay the same for every chunk of one upload', {
          path: 'clientUploadId',
        });
      }
      if (upload.status === 'done' && upload.url) return { url: upload.url };
      if (file.size > this.#config.maxChunkBytes) {
        throw AppError.tooLarge(`A chunk may be at most ${formatBytes(this.#config.maxChunkBytes)}`, { path: 'file' });
      }

      // Settled once (by the chunk that creates the upload, when it tells): only a chunk that says
      // otherwise than the row goes to the database. The row as it is then: the one read before
      // the body may be of an upload finished or refused meanwhile, whose chunks are answered as
      // any of a finished or refused upload (and a stale row that agrees is caught by the
      // chunk's record: `finished`, `gone`).
      if (base !== null && upload.indexBase !== base) {
        const settled = await repo.settleIndexBase(upload.id, base);
        if (!settled) return await this.#refusedMeanwhile(upload.id);
        if (settled.status === 'done' && settled.url) return { url: settled.url };
        if (settled.indexBase !== base) {
          throw new AppError('ValidationError', 'The chunks of one upload must count either from 0 or from 1, not both', { path: 'chunkIndex' });
        }
        upload = settled;
      }
      // Once settled, the index base never changes: the row is read again only while it is unknown
      // (a parallel chunk may have just settled it).
      if (upload.indexBase === null) upload = (await repo.findUpload(upload.id)) ?? upload;

      // Received in place for an upload refused and begun again meanwhile: its bytes are in the old one's file.
      if (file.inPlace && file.inPlace.uploadId !== upload.id) {
        throw refusedMeanwhile();
      }
      // The first chunk of the upload (as the client counts) sets where the others go, unless it is also its last.
      const first = upload.indexBase ?? (fields.chunkIndex === 0 ? 0 : 1);
      const origin = fields.chunkIndex === first && fields.chunkIndex - first < upload.totalChunks - 1;
      const placed = await this.#store.keepChunk(file, upload.id, fields.chunkIndex, { origin });
      const outcome = await repo.recordChunk(upload.id, fields.chunkIndex, file.size, maxBytes, now);
      if (outcome === 'finished') {
        // Finished while this chunk's body arrived: its chunks are no longer needed, this one either.
        await this.#store.removeChunks(upload.id);
        const finished = await repo.findUpload(upload.id);
        if (finished?.url) return { url: finished.url };
        throw refusedMeanwhile();
      }
      if (outcome !== 'recorded') {
        if (placed) await this.#store.removeChunk(upload.id, fields.chunkIndex);
        if (outcome === 'gone') return await this.#refusedMeanwhile(upload.id);
        await this.#discard(upload);
        throw AppError.tooLarge(tooLargeMessage(maxBytes), { path: 'file' });
      }
      if (placed) {
        this.#hashes.advance(upload, fields.chunkIndex, file.continued);
        this.#metrics?.chunkStored();
      }
      // Other chunks of this upload may be being saved alongside this one, here or in another
      // process: the answer is as of after them, so the last chunks sent together all answer the
      // URL (one of them assembles the file). This request stops counting as under way first (its
      // chunk is recorded), or two of them would wait for each other; then where the upload
      // stands and who else is under way are read as of one moment.
      await this.#arrivals.leave(arrival);
      arrived = false;
      const standing = await repo.standing(upload.id, { profileId: viewer.profileId, clientUploadId: fields.clientUploadId, except: arrival, now: this.#now() });
      const answer = await this.#completeOrStatus(viewer, upload, maxBytes, standing.upload);
      if ('url' in answer || !(await this.#arrivals.awaitOthers(standing.others))) return answer;
      const again = (await repo.standing(upload.id)).upload;
      return again ? await this.#completeOrStatus(viewer, upload, maxBytes, again) : answer;
    } finally {
      if (arrived) await this.#arrivals.leave(arrival).catch((error: unknown) => this.#logger.error({ err: error }, 'chunk arrival not cleared'));
      if (file) await removeQuietly(file.path);
    }
  }

  /**
   * Assembles the upload when its chunks are all in (or waits for the request assembling it),
   * and answers its URL; answers the status map otherwise. `read` is where it stands, when the
   * caller has just read it (`AttachmentsRepository.standing`).
   */
  async #completeOrStatus(
    viewer: Viewer,
    given: ChunkedUpload,
    maxBytes: number,
    read?: UploadStanding | null,
  ): Promise<{ url: string } | Record<string, 'missing' | 'completed'>> {
    const repo = this.#repo;
    // How the client counts is read again with the chunks: `given` may have been read before a
    // parallel request settled it, and two last chunks arriving together could then each see the
    // set incomplete and neither assemble it.
    if (read === undefined) read = (await repo.standing(given.id)).upload;
    // Finished meanwhile (its chunks' rows went in the same transaction): its URL.
    if (read?.status === 'done' && read.url) return { url: read.url };
    const chunks = read?.chunks ?? new Map<number, number>();
    const upload = read && given.indexBase === null ? { ...given, indexBase: read.indexBase } : given;
    const indexes = indexesOf(upload);
    const complete = upload.indexBase !== null && indexes.every((i) => chunks.has(i));
    if (!complete) return statusMap(indexes, chunks);

    const now = this.#now();
    if (await repo.claimAssembly(upload.id, this.#holder, now, now - ASSEMBLY_LEASE_MS)) return this.#assemble(viewer, upload, indexes, chunks, maxBytes);
    return this.#awaitAssembly(viewer, upload, indexes, chunks, maxBytes);
  }

  /** Assembles a claimed upload; chunks of it arriving meanwhile in this service wait for the URL. */
  async #assemble(viewer: Viewer, upload: ChunkedUpload, indexes: number[], chunks: Map<number, number>, maxBytes: number): Promise<{ url: string }> {
    const work = this.#assembleNow(viewer, upload, indexes, chunks, maxBytes);
    this.#assembling.set(upload.id, work);
    try {
      return { url: await work };
    } finally {
      this.#assembling.delete(upload.id);
    }
  }

  async #assembleNow(viewer: Viewer, upload: ChunkedUpload, indexes: number[], chunks: Map<number, number>, maxBytes: number): Promise<string> {
    const repo = this.#repo;
    let assembled: Assembled | null = null;
    // The lease is renewed while the work runs: another process takes over only an assembly
    // whose process stopped.
    const renewal = setInterval(() => {
      repo.renewAssembly(upload.id, this.#holder, this.#now()).catch((error: unknown) => this.#logger.warn({ err: error, uploadId: upload.id }, 'assembly lease not renewed'));
    }, LEASE_RENEW_MS);
    try {
      assembled = await this.#store.assemble(upload.id, indexes, maxBytes, this.#hashes.prefixFor(upload, indexes));
      const expected = indexes.reduce((sum, i) => sum + (chunks.get(i) ?? 0), 0);
      // The copy of a chunk stored first is the one kept, and the size recorded first the one
      // counted: they differ only for a chunk sent again at another size after a process stopped
      // between storing and recording it, or sent twice at once at two sizes. Which bytes the
      // client meant is unknown, so the upload is refused (and so removed) rather than assembled
      // again, and failing, on every try.
      if (assembled.size !== expected) {
        throw new AppError('ValidationError', 'A chunk of this upload was sent twice with different sizes, so its stored chunks do not add up: start the upload again', { path: 'file' });
      }
      this.#uploads.checkContent(assembled, upload.extension, maxBytes);
      // The file goes into place only whole; it is recorded as the uploader's, and the upload as
      // done, in one transaction, by the lease's holder only.
      const file = assembled;
      const url = await this.#store.keepAssembled(file, upload.extension);
      assembled = null;
      const record = { profileId: viewer.profileId, invitation: upload.invitation, field: upload.field, url, size: file.size, sha1: file.sha1 };
      if (!(await repo.finish(upload.id, this.#holder, record, this.#now()))) {
        // The lease ran out and another process took the assembly over: its answer is the same file.
        const current = await repo.findUpload(upload.id);
        if (current?.status === 'done' && current.url) return current.url;
        throw new Error('the assembly was taken over by another process');
      }
      await this.#store.removeChunks(upload.id);
      this.#hashes.forget(upload);
      this.#metrics?.assembly('done');
      return url;
    } catch (error) {
      this.#metrics?.assembly(error instanceof AppError ? 'refused' : 'error');
      if (assembled) await this.#store.discard(assembled).catch(() => undefined);
      if (error instanceof AppError) {
        // The file as a whole is refused: the upload cannot succeed, so nothing of it is kept.
        await this.#discard(upload);
      } else {
        await repo.release(upload.id, this.#now(), this.#holder);
      }
      throw error;
    } finally {
      clearInterval(renewal);
    }
  }

  /**
   * The upload is being assembled, or was: by this service (wait for it), by a process whose
   * lease ran out (take it over and assemble it now), or by another running process (check on
   * it until it is done, its lease runs out, or a minute has passed).
   */
  async #awaitAssembly(viewer: Viewer, upload: ChunkedUpload, indexes: number[], chunks: Map<number, number>, maxBytes: number) {
    const deadline = performance.now() + WAIT_FOR_OTHER_PROCESS_MS;
    for (;;) {
      const current = await this.#repo.findUpload(upload.id);
      if (!current) throw new AppError('ValidationError', 'The upload was refused; start again', { path: 'clientUploadId' });
      if (current.status === 'done' && current.url) return { url: current.url };
      const now = this.#now();
      if (current.status === 'receiving') {
        // A failed assembly gave it back: claim it again.
        if (await this.#repo.claimAssembly(upload.id, this.#holder, now, now - ASSEMBLY_LEASE_MS)) return this.#assemble(viewer, current, indexes, chunks, maxBytes);
        continue;
      }
      const here = current.assemblyOwner === this.#holder ? this.#assembling.get(upload.id) : undefined;
      if (here) {
        const url = await here.catch(() => null);
        if (url) return { url };
        // It failed here: the next round sees why (refused and gone, or back to receiving).
        continue;
      }
      if (ownerIsGone(current.assemblyOwner) || current.updatedAt < now - ASSEMBLY_LEASE_MS) {
        if (await this.#repo.takeOverAssembly(upload.id, current.assemblyOwner, this.#holder, now)) {
          this.#logger.info({ uploadId: upload.id }, 'assembly left by a stopped process: redone');
          return this.#assemble(viewer, current, indexes, chunks, maxBytes);
        }
        continue;
      }
      if (performance.now() >= deadline) return statusMap(indexes, chunks);
      await sleep(OTHER_PROCESS_POLL_MS);
    }
  }

  /**
   * At start: assemblies whose lease ran out, or whose holder was a process of this kernel that
   * has stopped, go back to receiving (re-sending a chunk then assembles at once); this machine's
   * temporary files of stopped processes are removed, and so are the chunks of uploads finished
   * just before a stop. Another machine's assembly cut by a stop moments ago still holds its
   * lease: the first chunk sent after it runs out takes it over.
   */
  async recover(startedAt = this.#now()): Promise<void> {
    const repo = this.#repo;
    let released = 0;
    for (const { id, owner, renewedAt } of await repo.assemblies()) {
      if (!ownerIsGone(owner) && renewedAt >= this.#now() - ASSEMBLY_LEASE_MS) continue;
      await repo.release(id, this.#now(), owner);
      released += 1;
    }
    const removed = await this.#store.removeTemporaryOfStopped(startedAt);
    await this.#arrivals.sweep();
    for (const id of await repo.finishedAmong(await this.#store.chunkUploads())) await this.#store.removeChunks(id);
    if (released > 0 || removed > 0) this.#logger.info({ assemblies: released, temporaryFiles: removed }, 'uploads cut by a stop recovered');
  }

  /** A chunk of an upload refused meanwhile: whatever of it reached the store goes too (a late chunk may have put it back). */
  async #refusedMeanwhile(uploadId: string): Promise<never> {
    await this.#store.removeChunks(uploadId);
    throw refusedMeanwhile();
  }

  async #discard(upload: ChunkedUpload): Promise<void> {
    this.#hashes.forget(upload);
    await this.#repo.deleteUpload(upload.id);
    await this.#store.removeChunks(upload.id);
  }

  /**
   * Deletes chunked uploads untouched for `UPLOAD_ABANDON_SECONDS` (their chunks with them) and
   * temporary files left by a crash. Runs in the server every ten minutes.
   */
  async sweep(): Promise<number> {
    const before = this.#now() - this.#config.uploadAbandonSeconds * 1000;
    const stale = await this.#repo.staleUploads(before);
    const staleIds = new Set(stale);
    this.#hashes.forgetUploads(staleIds);
    for (const id of stale) {
      await this.#repo.deleteUpload(id);
      await this.#store.removeChunks(id);
    }
    // Chunks whose upload row is gone (a refusal racing a late chunk).
    await this.#store.sweepOrphanChunks(await this.#repo.uploadIds(), before);
    await this.#arrivals.sweep();
    await this.#store.sweepTemporary(this.#now() - 24 * 60 * 60 * 1000);
    if (stale.length > 0) this.#logger.info({ count: stale.length }, 'abandoned uploads deleted');
    return stale.length;
  }
}
