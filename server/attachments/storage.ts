import { createHash, randomUUID, type Hash } from 'node:crypto';
import { constants as fsConstants, createWriteStream } from 'node:fs';
import { link, lstat, mkdir, open, readdir, readFile, readlink, rm, stat, symlink, unlink, writeFile, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { type Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AppError } from '../../shared/errors.ts';
import { fileUrlExtension, tooLargeMessage } from '../../shared/forms.ts';
import type { StorageTarget } from '../config.ts';
import { ownerIsGone, PROCESS_OWNER } from './owners.ts';

/** A file received into this machine's temporary folder: its path, length, SHA-1 and first bytes. */
export interface Received {
  path: string;
  size: number;
  sha1: string;
  /** The first bytes, to check a PDF's `%PDF-` signature. */
  head: Buffer;
  /**
   * When `receive` was given a SHA-1 to continue (`continueHash`): that hash, now also over this
   * file's bytes, not digested. The upload's service keeps it as the hash of the chunks so far.
   */
  continued?: Hash;
  /**
   * A chunk received in place (`ReceiveOptions.slot`): its bytes are in its upload's data file at
   * `position`, and `path` is the slot's claim, which removing gives up (the bytes then count
   * for nothing). `keepChunk` makes it a stored chunk.
   */
  inPlace?: { uploadId: string; index: number; position: number };
}

/**
 * A chunk's place in its upload's data file (the local store, see `LocalFileStore`), claimed by
 * one request: the bytes go there as they arrive, at most `room` of them (more are moved to a
 * temporary file, and the chunk is kept apart).
 */
export interface ChunkSlot {
  uploadId: string;
  index: number;
  position: number;
  room: number;
  /** The claim's path: removing it gives the slot up. */
  claim: string;
}

/**
 * What an upload's service has already hashed of the file being assembled: the first `chunks`
 * chunks (in the order given to `assemble`), as files this process stored and nothing since
 * replaced (a stored chunk never is). The assembly hashes only the rest.
 */
export interface HashedPrefix {
  chunks: number;
  hash: Hash;
}

/** A file assembled from an upload's chunks, held by the store under a temporary name until kept or discarded. */
export interface Assembled {
  /** The store's own name for it: a path on disk, a key in a bucket. */
  temporary: string;
  size: number;
  sha1: string;
  head: Buffer;
}

/** A stored file's length and when it was stored (its `Last-Modified`). */
export interface StoredInfo {
  size: number;
  modifiedAt: Date;
}

/** A byte range of a stored file, both ends included. */
export interface ByteRange {
  start: number;
  end: number;
}

/**
 * Where uploaded files live: stored files under their content address, the chunks of unfinished
 * uploads, and assemblies under way. Two back ends (`STORAGE_URL`): the local disk under
 * `$DATA_DIR` (`LocalFileStore`) and an S3-compatible bucket (`S3FileStore`), which several
 * server processes on several machines can share. Either way a file being received by a request
 * goes first to this machine's temporary folder (`$DATA_DIR/tmp`): it is the request's alone and
 * is checked there before anything is stored.
 *
 * Rules both keep: names are built from a validated hex hash, a validated extension or a
 * server-made id, never from what a client sends; a stored file or a chunk already there is never
 * replaced (the first one stays).
 */
export interface FileStore {
  init(): Promise<void>;
  /** Streams `source` into a temporary file of this machine, hashing and counting (see `TemporaryFolder.receive`). */
  receive(source: Readable, maxBytes: number, opts?: ReceiveOptions): Promise<Received>;
  /** Stores a received file under its content address (a second copy is dropped) and removes the temporary file. Answers the URL. */
  keep(received: Received, extension: string): Promise<string>;
  /** A stored file's length and date, or null when there is none under that URL. */
  info(url: string): Promise<StoredInfo | null>;
  /** A stored file's bytes (or a range of them); a NotFoundError when it is not there. */
  read(url: string, range?: ByteRange): Promise<Readable>;

  /**
   * Stores a received chunk of an upload and removes the temporary file; a chunk already stored is
   * kept. Answers whether this call stored it. `origin`: this chunk is the first of its upload
   * and no other came before it, so it may set where the others go (the local store's layout).
   */
  keepChunk(received: Received, uploadId: string, index: number, opts?: { origin?: boolean }): Promise<boolean>;
  /**
   * Where a chunk's bytes may go as they arrive, claimed for this request, or null (then it is
   * received into a temporary file). Only the local store has one: S3 keeps each chunk an object.
   * None starts at or past `maxBytes` (the file's limit).
   */
  slotFor?(uploadId: string, index: number, maxBytes: number): Promise<ChunkSlot | null>;
  removeChunk(uploadId: string, index: number): Promise<void>;
  removeChunks(uploadId: string): Promise<void>;
  /** The upload ids that have chunks stored. */
  chunkUploads(): Promise<string[]>;
  /**
   * Concatenates the chunks, in order, under a temporary name, hashing as it goes and never
   * holding the file in memory (the local store links chunks written in place instead of copying
   * them); past `maxBytes` it stops with a 413. Nothing is left on failure.
   */
  assemble(uploadId: string, indexes: number[], maxBytes: number, hashed?: HashedPrefix): Promise<Assembled>;
  /** Stores an assembled file under its content address (as `keep` does) and drops its temporary copy. */
  keepAssembled(file: Assembled, extension: string): Promise<string>;
  discard(file: Assembled): Promise<void>;

  /** Removes the chunks of uploads not in `live` that were last written before `olderThan`. */
  sweepOrphanChunks(live: Set<string>, olderThan: number): Promise<void>;
  /** Removes temporary files (and assemblies) older than `olderThan` (ms since the epoch), left by a crash. */
  sweepTemporary(olderThan: number): Promise<void>;
  /**
   * At start: removes this machine's temporary files of processes that stopped (see owners.ts),
   * and on the local disk their claims on chunk slots too. Answers how many it removed.
   */
  removeTemporaryOfStopped(startedAt: number): Promise<number>;
}

/**
 * `hash: false` skips the SHA-1; `continueHash` feeds the bytes into a hash begun elsewhere (see
 * `Received.continued`); `slot`, a chunk's claimed place in its upload's data file (`slotFor`).
 */
export interface ReceiveOptions {
  hash?: boolean;
  continueHash?: Hash;
  slot?: ChunkSlot;
}

/** The FileStore `STORAGE_URL` names. The S3 client is loaded only when a bucket is used. */
export async function openFileStore(target: StorageTarget, dataDir: string): Promise<FileStore> {
  if (target.kind === 'local') return new LocalFileStore(dataDir);
  const { S3FileStore } = await import('./s3-storage.ts');
  return new S3FileStore(target, dataDir);
}

/** The URL a stored file is known by. */
export function urlOf(sha1: string, extension: string): string {
  return extension === 'pdf' ? `/pdf/${sha1}.pdf` : `/attachment/${sha1}.${extension}`;
}

/** A stored file's name below the store's `files/` (`pdf/<sha1>.pdf`, `attachment/<sha1>.<ext>`), or null when the URL is not one of ours. */
export function storedName(url: string): string | null {
  const extension = fileUrlExtension(url);
  if (extension === null) return null;
  const name = url.slice(url.lastIndexOf('/') + 1);
  return `${extension === 'pdf' && url.startsWith('/pdf/') ? 'pdf' : 'attachment'}/${name}`;
}

/** Upload ids are server-made UUIDs: anything else never becomes part of a name. */
export function checkUploadId(uploadId: string): string {
  if (!/^[0-9a-f-]{36}$/.test(uploadId)) throw new Error(`not an upload id: ${uploadId}`);
  return uploadId;
}

const HEAD_BYTES = 8;
/** How much of a chunk file the local assembly reads at once. */
const ASSEMBLY_BUFFER_BYTES = 1024 * 1024;

/**
 * Counts, hashes and keeps the first bytes of what goes through it, stopping with a 413 past
 * `maxBytes`: every file a store takes in (received or assembled) passes one.
 */
export class Meter extends Transform {
  size = 0;
  readonly #hash: Hash | null;
  readonly #maxBytes: number;
  #head: Buffer[] = [];
  #headLength = 0;

  readonly #digests: boolean;

  /**
   * `hash`: whether to hash, or a hash begun elsewhere to go on with, which `result` digests only
   * when `digests` says so (a received chunk's is the upload's running hash, digested at the end).
   */
  constructor(maxBytes: number, hash: boolean | Hash = true, digests = hash !== false) {
    super();
    this.#maxBytes = maxBytes;
    this.#hash = hash === true ? createHash('sha1') : hash === false ? null : hash;
    this.#digests = digests;
  }

  /** Takes in `bytes` (into the hash too unless `hash` is false); throws the 413 once past the limit. */
  count(bytes: Buffer, hash = true): void {
    this.size += bytes.length;
    if (this.size > this.#maxBytes) throw AppError.tooLarge(tooLargeMessage(this.#maxBytes), { path: 'file' });
    if (this.#headLength < HEAD_BYTES) {
      // A copy: the caller may reuse its buffer (the local assembly does).
      const piece = Buffer.from(bytes.subarray(0, HEAD_BYTES - this.#headLength));
      this.#head.push(piece);
      this.#headLength += piece.length;
    }
    if (hash) this.#hash?.update(bytes);
  }

  /** Counts `bytes` without hashing them (the assembly hashes them itself, or had them hashed already). */
  measure(bytes: Buffer): void {
    this.count(bytes, false);
  }

  /** Counts `length` bytes that are not read at all (hashed already, and past the first bytes). */
  skip(length: number): void {
    this.size += length;
    if (this.size > this.#maxBytes) throw AppError.tooLarge(tooLargeMessage(this.#maxBytes), { path: 'file' });
  }

  /** Hashes `bytes` already counted by `measure`. */
  hash(bytes: Buffer): void {
    this.#hash?.update(bytes);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null, data?: Buffer) => void): void {
    try {
      this.count(chunk);
    } catch (error) {
      done(error as Error);
      return;
    }
    done(null, chunk);
  }

  /** The SHA-1 (`''` when not hashing) and the first bytes, once everything went through. */
  result(): { size: number; sha1: string; head: Buffer } {
    return { size: this.size, sha1: this.#digests ? (this.#hash?.digest('hex') ?? '') : '', head: Buffer.concat(this.#head) };
  }
}

/**
 * This machine's temporary folder (`$DATA_DIR/tmp`): files being received, and the local store's
 * assemblies. Each is named after the process writing it (`<owner>~<uuid>`, see owners.ts), so
 * that a process starting after a crash can tell what is left over from what another is writing.
 */
export class TemporaryFolder {
  readonly #dir: string;
  readonly #owner: string;

  constructor(dataDir: string, owner = PROCESS_OWNER) {
    this.#dir = path.join(dataDir, 'tmp');
    this.#owner = owner;
  }

  async init(): Promise<void> {
    await mkdir(this.#dir, { recursive: true });
  }

  /** A new temporary file's path. */
  newPath(): string {
    return path.join(this.#dir, `${this.#owner}~${randomUUID()}`);
  }

  /**
   * Streams `source` into a new temporary file (opened exclusively), hashing and counting as the
   * bytes arrive. Past `maxBytes` it stops with a 413 and the temporary file is removed; so it is
   * when the source fails (the client went away). `hash: false` skips the SHA-1 (5 ms for a 5 MB
   * chunk, whose own hash nothing uses) and answers `sha1: ''`.
   */
  async receive(source: Readable, maxBytes: number, opts: ReceiveOptions = {}): Promise<Received> {
    const file = this.newPath();
    const meter = new Meter(maxBytes, opts.continueHash ?? opts.hash !== false, !opts.continueHash && opts.hash !== false);
    try {
      await pipeline(source, meter, createWriteStream(file, { flags: 'wx', mode: 0o600 }));
    } catch (error) {
      await removeQuietly(file);
      throw error;
    }
    return { path: file, ...meter.result(), ...(opts.continueHash ? { continued: opts.continueHash } : {}) };
  }

  /** Temporary files older than `olderThan` (ms since the epoch), left by a crash. */
  async sweep(olderThan: number): Promise<void> {
    for (const name of await readdir(this.#dir).catch(() => [] as string[])) {
      const file = path.join(this.#dir, name);
      const info = await stat(file).catch(() => null);
      if (info && info.mtimeMs < olderThan) await removeQuietly(file);
    }
  }

  /**
   * At start: removes the temporary files of processes that stopped (a crash in the middle of
   * receiving or assembling), and unnamed ones from before `startedAt`. Another running
   * process's files, and those of another machine sharing the folder, are left alone (the sweep
   * removes them once a day old).
   */
  async removeOfStopped(startedAt: number): Promise<number> {
    let removed = 0;
    for (const name of await readdir(this.#dir).catch(() => [] as string[])) {
      const file = path.join(this.#dir, name);
      const owner = name.includes('~') ? name.slice(0, name.indexOf('~')) : null;
      if (owner !== null ? !ownerIsGone(owner) : ((await stat(file).catch(() => null))?.mtimeMs ?? Infinity) >= startedAt) continue;
      await removeQuietly(file);
      removed += 1;
    }
    return removed;
  }
}

/** A chunk kept in place is a symbolic link whose target (never followed) says where its bytes are: `in-place:<position>:<size>`. */
const IN_PLACE = 'in-place:';

/** Where a stored chunk's bytes are: a file of its own, or a range of its upload's data file. */
type ChunkPart = { file: string } | { position: number; size: number };

/**
 * Content-addressed file storage on the local disk under `$DATA_DIR`: `files/pdf/<sha1>.pdf` and
 * `files/attachment/<sha1>.<ext>`, with `tmp/` for files being received and assembled and
 * `chunks/<upload id>/` for the chunks of unfinished uploads. Several processes may share the
 * folder (on one machine, or on a shared file system): every write is an exclusive create, an
 * atomic link, or a positional write into a slot its writer claimed with an exclusive create.
 *
 * An upload's chunks go in place into one data file, `chunks/<id>/data`, as tus's file store
 * appends them: the first chunk (index 0, or 1 for clients counting from 1) is received into a
 * temporary file like any other and linked as `data`, and its size becomes the upload's stride
 * (`layout`, a symbolic link whose target is `<first index>:<stride>`); every later chunk is then
 * written, as it arrives, at `(index − first) × stride`. Each index has a claim,
 * `<index>.claim` (created exclusively, removed when its request ends), so two requests for the
 * same index never write the same bytes, and a stored chunk is `<index>`: a symbolic link
 * `in-place:<position>:<size>` once its bytes are all in, or, for a chunk that could not go in
 * place (a stride not known yet, an index whose claim is held, a chunk larger than the stride),
 * a file of its own as before. A cut or refused chunk leaves bytes in its slot that no `<index>`
 * names: they count for nothing, and the next copy of that chunk overwrites them. When every
 * chunk is in place, one after the other from position 0, the data file is the file: the
 * assembly hashes only what was not hashed as it arrived, cuts off anything past the end, and
 * links it to its content address; otherwise it copies, as before.
 */
export class LocalFileStore implements FileStore {
  readonly #files: string;
  readonly #chunks: string;
  readonly #tmp: TemporaryFolder;
  readonly #owner: string;

  constructor(dataDir: string, owner = PROCESS_OWNER) {
    this.#files = path.join(dataDir, 'files');
    this.#chunks = path.join(dataDir, 'chunks');
    this.#tmp = new TemporaryFolder(dataDir, owner);
    this.#owner = owner;
  }

  async init(): Promise<void> {
    for (const dir of [path.join(this.#files, 'pdf'), path.join(this.#files, 'attachment'), this.#chunks]) {
      await mkdir(dir, { recursive: true });
    }
    await this.#tmp.init();
  }

  receive(source: Readable, maxBytes: number, opts: ReceiveOptions = {}): Promise<Received> {
    return opts.slot ? this.#receiveInPlace(source, maxBytes, opts.slot, opts) : this.#tmp.receive(source, maxBytes, opts);
  }

  #pathOf(url: string): string | null {
    const name = storedName(url);
    return name === null ? null : path.join(this.#files, ...name.split('/'));
  }

  /** Links a file into its content-addressed place (atomic), then removes the temporary name. */
  async #place(temporary: string, sha1: string, extension: string): Promise<string> {
    const url = urlOf(sha1, extension);
    const target = this.#pathOf(url);
    if (!target) throw new Error(`not a storable URL: ${url}`);
    // A file already stored under this name stays: link() refuses to replace it. The same
    // name is the same SHA-1, so normally the same bytes; never replacing also means that two
    // different files made to share a SHA-1 cannot swap a paper already submitted.
    try {
      await link(temporary, target);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    await unlink(temporary);
    return url;
  }

  keep(received: Received, extension: string): Promise<string> {
    return this.#place(received.path, received.sha1, extension);
  }

  keepAssembled(file: Assembled, extension: string): Promise<string> {
    return this.#place(file.temporary, file.sha1, extension);
  }

  async discard(file: Assembled): Promise<void> {
    await removeQuietly(file.temporary);
  }

  async info(url: string): Promise<StoredInfo | null> {
    const file = this.#pathOf(url);
    if (!file) return null;
    const found = await stat(file).catch(() => null);
    return found?.isFile() ? { size: found.size, modifiedAt: found.mtime } : null;
  }

  async read(url: string, range?: ByteRange): Promise<Readable> {
    const file = this.#pathOf(url);
    // Opened before answering, so a file gone meanwhile is a 404 rather than a cut-off body.
    const handle = file ? await open(file, 'r').catch(() => null) : null;
    if (!handle) throw new AppError('NotFoundError', `File Not Found: ${url}`);
    return handle.createReadStream(range ? { start: range.start, end: range.end } : {});
  }

  // ---- chunks ----------------------------------------------------------------------------------

  #chunkDir(uploadId: string): string {
    return path.join(this.#chunks, checkUploadId(uploadId));
  }

  #chunkPath(uploadId: string, index: number): string {
    return path.join(this.#chunkDir(uploadId), String(Math.trunc(index)));
  }

  #claimPath(uploadId: string, index: number): string {
    return `${this.#chunkPath(uploadId, index)}.claim`;
  }

  #dataPath(uploadId: string): string {
    return path.join(this.#chunkDir(uploadId), 'data');
  }

  #sealPath(uploadId: string): string {
    return path.join(this.#chunkDir(uploadId), 'sealed');
  }

  #layoutPath(uploadId: string): string {
    return path.join(this.#chunkDir(uploadId), 'layout');
  }

  /**
   * Claims an index for this request (an exclusive create), writing this process's owner id into
   * the claim (see `removeTemporaryOfStopped`): false when another holds it, or the upload's
   * folder is gone.
   */
  async #claim(claim: string): Promise<boolean> {
    let handle: FileHandle;
    try {
      handle = await open(claim, 'wx', 0o600);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EEXIST' || code === 'ENOENT') return false;
      throw error;
    }
    try {
      await handle.writeFile(this.#owner);
    } catch (error) {
      await handle.close().catch(() => undefined);
      await removeQuietly(claim);
      throw error;
    }
    await handle.close();
    return true;
  }

  async #exists(file: string): Promise<boolean> {
    return (await lstat(file).catch(() => null)) !== null;
  }

  /** The upload's first index and stride, once its first chunk set them. */
  async #layout(uploadId: string): Promise<{ first: number; stride: number } | null> {
    const target = await readlink(this.#layoutPath(uploadId)).catch(() => null);
    const match = target ? /^(\d{1,9}):(\d{1,15})$/.exec(target) : null;
    return match ? { first: Number(match[1]), stride: Number(match[2]) } : null;
  }

  async slotFor(uploadId: string, index: number, maxBytes: number): Promise<ChunkSlot | null> {
    const layout = await this.#layout(uploadId);
    if (!layout || layout.stride === 0 || !Number.isInteger(index) || index <= layout.first) return null;
    const position = (index - layout.first) * layout.stride;
    if (position >= maxBytes) return null;
    const claim = this.#claimPath(uploadId, index);
    if (!(await this.#claim(claim))) return null;
    // A chunk stored already (a retry) is never written over: its copy is received apart and
    // dropped. Nor is a data file whose assembly has begun (`sealed`, made before the assembly
    // looks for claims: whichever of the two comes second sees the other).
    if ((await this.#exists(this.#chunkPath(uploadId, index))) || (await this.#exists(this.#sealPath(uploadId)))) {
      await removeQuietly(claim);
      return null;
    }
    return { uploadId, index, position, room: layout.stride, claim };
  }

  /**
   * Streams a chunk into its claimed slot of the data file, counting and hashing as `receive`
   * does. More bytes than the slot's room move, with what was written, to a temporary file: the
   * chunk is then an ordinary received file. On failure the claim is given up, and what was
   * written counts for nothing.
   */
  async #receiveInPlace(source: Readable, maxBytes: number, slot: ChunkSlot, opts: ReceiveOptions): Promise<Received> {
    const meter = new Meter(maxBytes, opts.continueHash ?? opts.hash !== false, !opts.continueHash && opts.hash !== false);
    const writer = new SlotWriter(this.#dataPath(slot.uploadId), slot, () => this.#tmp.newPath());
    try {
      await pipeline(source, meter, writer);
    } catch (error) {
      await writer.settled;
      if (writer.spilled) await removeQuietly(writer.spilled);
      await removeQuietly(slot.claim);
      throw error;
    }
    await writer.settled;
    const continued = opts.continueHash ? { continued: opts.continueHash } : {};
    if (writer.spilled) {
      await removeQuietly(slot.claim);
      return { path: writer.spilled, ...meter.result(), ...continued };
    }
    return { path: slot.claim, ...meter.result(), ...continued, inPlace: { uploadId: slot.uploadId, index: slot.index, position: slot.position } };
  }

  /**
   * A chunk already there (a retry) is kept as it was: link() and symlink() refuse to replace it.
   * A chunk received in place becomes its marker; the first chunk, its upload's data file.
   */
  async keepChunk(received: Received, uploadId: string, index: number, opts: { origin?: boolean } = {}): Promise<boolean> {
    if (received.inPlace) {
      try {
        if (received.inPlace.uploadId !== uploadId || received.inPlace.index !== index) return false;
        await symlink(`${IN_PLACE}${received.inPlace.position}:${received.size}`, this.#chunkPath(uploadId, index));
        return true;
      } catch (error) {
        // EEXIST: a retry, the chunk is there already. ENOENT: the upload's folder is gone (a
        // parallel chunk had it refused, or the sweep took it): not placed, and recording the
        // chunk then finds the upload gone, which is the client's 400, not a 500.
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== 'EEXIST' && code !== 'ENOENT') throw error;
        return false;
      } finally {
        // The claim goes only once the marker is there: a later copy of this index sees it and never writes.
        await removeQuietly(received.path);
      }
    }
    await mkdir(this.#chunkDir(uploadId), { recursive: true });
    try {
      if (opts.origin) {
        const placed = await this.#keepAsData(received, uploadId, index);
        if (placed !== null) return placed;
      }
      await link(received.path, this.#chunkPath(uploadId, index));
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      return false;
    } finally {
      await removeQuietly(received.path);
    }
  }

  /**
   * The first chunk becomes the upload's data file, and its size the stride: null when that cannot
   * be (another chunk set the layout, or wrote into the data file, first): it is then kept apart.
   */
  async #keepAsData(received: Received, uploadId: string, index: number): Promise<boolean | null> {
    if (received.size === 0) return null;
    const claim = this.#claimPath(uploadId, index);
    if (!(await this.#claim(claim))) return null;
    try {
      if (await this.#exists(this.#chunkPath(uploadId, index))) return false;
      const layout = `${index}:${received.size}`;
      try {
        await symlink(layout, this.#layoutPath(uploadId));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        // Set already: by an earlier copy of this very chunk that stopped before the data file was linked, or by another.
        const settled = await this.#layout(uploadId);
        if (settled?.first !== index || settled.stride !== received.size) return null;
      }
      try {
        await link(received.path, this.#dataPath(uploadId));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        return null;
      }
      try {
        await symlink(`${IN_PLACE}0:${received.size}`, this.#chunkPath(uploadId, index));
        return true;
      } catch (error) {
        // Kept apart meanwhile: the data file's first bytes count for nothing, and never go elsewhere.
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        return false;
      }
    } finally {
      await removeQuietly(claim);
    }
  }

  async removeChunk(uploadId: string, index: number): Promise<void> {
    await removeQuietly(this.#chunkPath(uploadId, index));
  }

  async removeChunks(uploadId: string): Promise<void> {
    await rm(this.#chunkDir(uploadId), { recursive: true, force: true });
  }

  async chunkUploads(): Promise<string[]> {
    return (await readdir(this.#chunks).catch(() => [] as string[])).filter((name) => /^[0-9a-f-]{36}$/.test(name));
  }

  async sweepOrphanChunks(live: Set<string>, olderThan: number): Promise<void> {
    for (const name of await this.chunkUploads()) {
      if (live.has(name)) continue;
      const info = await stat(path.join(this.#chunks, name)).catch(() => null);
      if (info && info.mtimeMs < olderThan) await rm(path.join(this.#chunks, name), { recursive: true, force: true });
    }
  }

  /** Where a stored chunk's bytes are. */
  async #partOf(uploadId: string, index: number): Promise<ChunkPart> {
    const file = this.#chunkPath(uploadId, index);
    const target = await readlink(file).catch((error: NodeJS.ErrnoException) => {
      // EINVAL: not a symbolic link, so a chunk file of its own.
      if (error.code === 'EINVAL') return null;
      throw error;
    });
    if (target === null) return { file };
    const match = new RegExp(`^${IN_PLACE}(\\d{1,15}):(\\d{1,15})$`).exec(target);
    if (!match) throw new Error(`not a chunk marker: ${target}`);
    return { position: Number(match[1]), size: Number(match[2]) };
  }

  /**
   * When every chunk is in place one after the other from the data file's start, the data file
   * is the file: only the bytes not hashed as they arrived are read (none, for a client sending
   * in order to one process), and it is linked under a temporary name. Otherwise into a new
   * temporary file (opened exclusively), a megabyte at a time through one buffer: a stream's
   * 64 KiB pieces made this copy take twice as long, and ten assemblies at once hold ten
   * megabytes. Each piece is hashed while it is being written (the write runs on libuv's
   * threads), and the first `hashed.chunks` chunks not at all: the service hashed them as they
   * arrived.
   */
  async assemble(uploadId: string, indexes: number[], maxBytes: number, hashed?: HashedPrefix): Promise<Assembled> {
    const parts: ChunkPart[] = [];
    for (const index of indexes) parts.push(await this.#partOf(uploadId, index));
    const meter = new Meter(maxBytes, hashed?.hash ?? true, true);
    let end = 0;
    const inPlace = parts.every((part) => {
      const follows = 'position' in part && part.position === end;
      if ('position' in part) end += part.size;
      return follows;
    });
    if (inPlace && (await this.#seal(uploadId))) return this.#assembleInPlace(uploadId, parts as Array<{ position: number; size: number }>, meter, hashed?.chunks ?? 0);

    const file = this.#tmp.newPath();
    const buffer = Buffer.allocUnsafe(ASSEMBLY_BUFFER_BYTES);
    const out = await open(file, 'wx', 0o600);
    let data: FileHandle | null = null;
    try {
      for (const [position, part] of parts.entries()) {
        const hashThis = position >= (hashed?.chunks ?? 0);
        const copy = async (handle: FileHandle, from: number, length: number) => {
          for (let offset = 0; offset < length; ) {
            const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, length - offset), from + offset);
            if (bytesRead === 0) throw new Error(`chunk of ${uploadId} shorter than recorded`);
            offset += bytesRead;
            const bytes = buffer.subarray(0, bytesRead);
            meter.measure(bytes);
            const written = writeAll(out, bytes);
            // Hashing reads the buffer the write is reading too: neither changes it, and the next
            // read into it waits for both.
            if (hashThis) meter.hash(bytes);
            await written;
          }
        };
        if ('file' in part) {
          const handle = await open(part.file, 'r');
          try {
            await copy(handle, 0, (await handle.stat()).size);
          } finally {
            await handle.close();
          }
        } else {
          data ??= await open(this.#dataPath(uploadId), 'r');
          await copy(data, part.position, part.size);
        }
      }
      await out.close();
    } catch (error) {
      await out.close().catch(() => undefined);
      await removeQuietly(file);
      throw error;
    } finally {
      await data?.close().catch(() => undefined);
    }
    return { temporary: file, ...meter.result() };
  }

  /**
   * Before the data file becomes the stored file (the same inode, until the chunks are removed),
   * no request may write into it again: new claims are refused once `sealed` is there, and one
   * already held (a request for an index outside the upload, under way; or a claim left by a
   * stopped process) means the file is copied instead. False then.
   */
  async #seal(uploadId: string): Promise<boolean> {
    await writeFile(this.#sealPath(uploadId), '', { mode: 0o600 });
    return !(await readdir(this.#chunkDir(uploadId))).some((name) => name.endsWith('.claim'));
  }

  async #assembleInPlace(uploadId: string, parts: Array<{ position: number; size: number }>, meter: Meter, hashedChunks: number): Promise<Assembled> {
    const size = parts.reduce((sum, part) => sum + part.size, 0);
    const hashedBytes = parts.slice(0, hashedChunks).reduce((sum, part) => sum + part.size, 0);
    const data = await open(this.#dataPath(uploadId), 'r+');
    const file = this.#tmp.newPath();
    try {
      const buffer = Buffer.allocUnsafe(Math.min(ASSEMBLY_BUFFER_BYTES, Math.max(HEAD_BYTES, size - hashedBytes)));
      const feed = async (from: number, to: number, hash: boolean) => {
        for (let offset = from; offset < to; ) {
          const { bytesRead } = await data.read(buffer, 0, Math.min(buffer.length, to - offset), offset);
          if (bytesRead === 0) throw new Error(`data file of ${uploadId} shorter than its chunks`);
          offset += bytesRead;
          const bytes = buffer.subarray(0, bytesRead);
          meter.measure(bytes);
          if (hash) meter.hash(bytes);
        }
      };
      // The first bytes (for the PDF check), the rest of what was hashed counted unread, then the rest hashed.
      const headEnd = Math.min(HEAD_BYTES, hashedBytes);
      await feed(0, headEnd, false);
      meter.skip(hashedBytes - headEnd);
      await feed(hashedBytes, size, true);
      // Bytes past the end (a longer copy of the last chunk, cut) are no part of the file.
      await data.truncate(size);
      await data.close();
      // Under a temporary name of this process, as a copy would be: the data file goes with the chunks.
      await link(this.#dataPath(uploadId), file);
    } catch (error) {
      await data.close().catch(() => undefined);
      await removeQuietly(file);
      throw error;
    }
    return { temporary: file, ...meter.result() };
  }

  async sweepTemporary(olderThan: number): Promise<void> {
    await this.#tmp.sweep(olderThan);
  }

  /**
   * Also the claims that processes of this machine held when they stopped (a chunk cut by the
   * stop: its bytes count for nothing), so that the next copy of the chunk goes in place. A claim
   * without a whole owner id (the stop came between its create and its write) or of another
   * machine's process stays: its index is then received apart, as any claimed one is.
   */
  async removeTemporaryOfStopped(startedAt: number): Promise<number> {
    let removed = await this.#tmp.removeOfStopped(startedAt);
    for (const upload of await this.chunkUploads()) {
      const dir = path.join(this.#chunks, upload);
      for (const name of await readdir(dir).catch(() => [] as string[])) {
        if (!name.endsWith('.claim')) continue;
        const owner = (await readFile(path.join(dir, name), 'utf8').catch(() => '')).trim();
        // Only a whole owner id: one being written (or cut) is no proof its process stopped.
        if (!/^\d{1,10}\.[0-9a-f-]{36}\.[0-9a-f]{8}$/.test(owner) || !ownerIsGone(owner)) continue;
        await removeQuietly(path.join(dir, name));
        removed += 1;
      }
    }
    return removed;
  }
}

/**
 * Writes a chunk into its slot of the data file with positional writes (opened without
 * truncating, created if the first chunk's link has not made it yet). Past the slot's room it
 * copies what it wrote into a temporary file and goes on there (`spilled`). `settled` resolves
 * once no write is pending and every handle is closed, however it ended.
 */
class SlotWriter extends Writable {
  spilled: string | null = null;
  readonly settled: Promise<void>;
  readonly #dataPath: string;
  readonly #slot: ChunkSlot;
  readonly #newPath: () => string;
  #data: FileHandle | null = null;
  #spill: FileHandle | null = null;
  #written = 0;
  /** The write under way, if any: a destroy waits for it before closing the handles. */
  #pending: Promise<void> = Promise.resolve();
  #markClosed!: () => void;

  constructor(dataPath: string, slot: ChunkSlot, newPath: () => string) {
    super({ highWaterMark: ASSEMBLY_BUFFER_BYTES });
    this.#dataPath = dataPath;
    this.#slot = slot;
    this.#newPath = newPath;
    this.settled = new Promise((resolve) => (this.#markClosed = resolve));
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.#pending = this.#put([chunk]);
    this.#pending.then(() => done(), done);
  }

  override _writev(chunks: Array<{ chunk: Buffer }>, done: (error?: Error | null) => void): void {
    this.#pending = this.#put(chunks.map((c) => c.chunk));
    this.#pending.then(() => done(), done);
  }

  async #put(pieces: Buffer[]): Promise<void> {
    const length = pieces.reduce((sum, piece) => sum + piece.length, 0);
    if (!this.#spill && this.#written + length > this.#slot.room) await this.#spillNow();
    if (!this.#spill && !this.#data) {
      this.#data = await open(this.#dataPath, fsConstants.O_WRONLY | fsConstants.O_CREAT, 0o600).catch((error: NodeJS.ErrnoException) => {
        // The upload's folder went meanwhile (finished, or refused): the chunk is received apart.
        if (error.code === 'ENOENT') return null;
        throw error;
      });
      if (!this.#data) await this.#spillNow();
    }
    if (this.#spill) await writeAll(this.#spill, pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces));
    // What piled up while the last write ran goes in one system call, without a copy.
    else await writeAllAt(this.#data!, pieces, this.#slot.position + this.#written);
    this.#written += length;
  }

  /** More than the slot holds: what was written, and what follows, go to a temporary file instead. */
  async #spillNow(): Promise<void> {
    const file = this.#newPath();
    this.spilled = file;
    this.#spill = await open(file, 'wx', 0o600);
    if (this.#written === 0) return;
    const data = this.#data ?? (await open(this.#dataPath, 'r'));
    this.#data = data;
    const buffer = Buffer.allocUnsafe(Math.min(ASSEMBLY_BUFFER_BYTES, this.#written));
    for (let offset = 0; offset < this.#written; ) {
      const { bytesRead } = await data.read(buffer, 0, Math.min(buffer.length, this.#written - offset), this.#slot.position + offset);
      if (bytesRead === 0) throw new Error('slot shorter than written');
      await writeAll(this.#spill, buffer.subarray(0, bytesRead));
      offset += bytesRead;
    }
  }

  async #closeAll(): Promise<void> {
    await this.#data?.close().catch(() => undefined);
    await this.#spill?.close().catch(() => undefined);
    this.#data = null;
    this.#spill = null;
  }

  override _final(done: (error?: Error | null) => void): void {
    this.#closeAll().then(() => {
      this.#markClosed();
      done();
    }, done);
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    // A write may still be under way: the handles close after it.
    void this.#pending.catch(() => undefined).then(() => this.#closeAll()).then(() => {
      this.#markClosed();
      done(error);
    });
  }
}

/** Writes every byte of `pieces`, one after the other, from `position` (a write may take fewer than it is given). */
async function writeAllAt(handle: FileHandle, pieces: Buffer[], position: number): Promise<void> {
  let rest = pieces;
  for (let offset = position; rest.length > 0; ) {
    const { bytesWritten } = await handle.writev(rest, offset);
    offset += bytesWritten;
    let skip = bytesWritten;
    const left: Buffer[] = [];
    for (const piece of rest) {
      if (skip >= piece.length) skip -= piece.length;
      else {
        left.push(skip > 0 ? piece.subarray(skip) : piece);
        skip = 0;
      }
    }
    rest = left;
  }
}

/** Writes every byte of `bytes` at the file's position (a write may take fewer than it is given). */
async function writeAll(handle: FileHandle, bytes: Buffer): Promise<void> {
  for (let offset = 0; offset < bytes.length; ) {
    offset += (await handle.write(bytes, offset, bytes.length - offset)).bytesWritten;
  }
}

export async function removeQuietly(file: string): Promise<void> {
  await unlink(file).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
  });
}
