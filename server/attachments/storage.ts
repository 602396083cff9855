import { createHash, randomUUID, type Hash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { link, mkdir, open, readdir, rm, stat, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { type Readable, Transform } from 'node:stream';
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

  /** Stores a received chunk of an upload and removes the temporary file; a chunk already stored is kept. Answers whether this call stored it. */
  keepChunk(received: Received, uploadId: string, index: number): Promise<boolean>;
  removeChunk(uploadId: string, index: number): Promise<void>;
  removeChunks(uploadId: string): Promise<void>;
  /** The upload ids that have chunks stored. */
  chunkUploads(): Promise<string[]>;
  /**
   * Concatenates the chunks, in order, under a temporary name, hashing as it goes and never
   * holding the file in memory; past `maxBytes` it stops with a 413. Nothing is left on failure.
   */
  assemble(uploadId: string, indexes: number[], maxBytes: number, hashed?: HashedPrefix): Promise<Assembled>;
  /** Stores an assembled file under its content address (as `keep` does) and drops its temporary copy. */
  keepAssembled(file: Assembled, extension: string): Promise<string>;
  discard(file: Assembled): Promise<void>;

  /** Removes the chunks of uploads not in `live` that were last written before `olderThan`. */
  sweepOrphanChunks(live: Set<string>, olderThan: number): Promise<void>;
  /** Removes temporary files (and assemblies) older than `olderThan` (ms since the epoch), left by a crash. */
  sweepTemporary(olderThan: number): Promise<void>;
  /** At start: removes this machine's temporary files of processes that stopped (see owners.ts). Answers how many. */
  removeTemporaryOfStopped(startedAt: number): Promise<number>;
}

/** `hash: false` skips the SHA-1; `continueHash` feeds the bytes into a hash begun elsewhere (see `Received.continued`). */
export interface ReceiveOptions {
  hash?: boolean;
  continueHash?: Hash;
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

/**
 * Content-addressed file storage on the local disk under `$DATA_DIR`: `files/pdf/<sha1>.pdf` and
 * `files/attachment/<sha1>.<ext>`, with `tmp/` for files being received and assembled and
 * `chunks/<upload id>/<index>` for the chunks of unfinished uploads. Several processes may share
 * the folder (on one machine, or on a shared file system): every write is an exclusive create or
 * an atomic link.
 */
export class LocalFileStore implements FileStore {
  readonly #files: string;
  readonly #chunks: string;
  readonly #tmp: TemporaryFolder;

  constructor(dataDir: string, owner = PROCESS_OWNER) {
    this.#files = path.join(dataDir, 'files');
    this.#chunks = path.join(dataDir, 'chunks');
    this.#tmp = new TemporaryFolder(dataDir, owner);
  }

  async init(): Promise<void> {
    for (const dir of [path.join(this.#files, 'pdf'), path.join(this.#files, 'attachment'), this.#chunks]) {
      await mkdir(dir, { recursive: true });
    }
    await this.#tmp.init();
  }

  receive(source: Readable, maxBytes: number, opts: ReceiveOptions = {}): Promise<Received> {
    return this.#tmp.receive(source, maxBytes, opts);
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

  /** A chunk already there (a retry) is kept as it was: link() refuses to replace it. */
  async keepChunk(received: Received, uploadId: string, index: number): Promise<boolean> {
    await mkdir(this.#chunkDir(uploadId), { recursive: true });
    try {
      await link(received.path, this.#chunkPath(uploadId, index));
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      return false;
    } finally {
      await removeQuietly(received.path);
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

  /**
   * Into a new temporary file (opened exclusively), a megabyte at a time through one buffer: a
   * stream's 64 KiB pieces made this copy take twice as long (`npm run bench`, row 6), and ten
   * assemblies at once hold ten megabytes. Each piece is hashed while it is being written (the
   * write runs on libuv's threads), and the first `hashed.chunks` chunks not at all: the service
   * hashed them as they arrived.
   */
  async assemble(uploadId: string, indexes: number[], maxBytes: number, hashed?: HashedPrefix): Promise<Assembled> {
    const file = this.#tmp.newPath();
    const meter = new Meter(maxBytes, hashed?.hash ?? true, true);
    const buffer = Buffer.allocUnsafe(ASSEMBLY_BUFFER_BYTES);
    const out = await open(file, 'wx', 0o600);
    try {
      for (const [position, index] of indexes.entries()) {
        const hashThis = position >= (hashed?.chunks ?? 0);
        const part = await open(this.#chunkPath(uploadId, index), 'r');
        try {
          for (let read = await part.read(buffer, 0, buffer.length); read.bytesRead > 0; read = await part.read(buffer, 0, buffer.length)) {
            const bytes = buffer.subarray(0, read.bytesRead);
            meter.measure(bytes);
            const written = writeAll(out, bytes);
            // Hashing reads the buffer the write is reading too: neither changes it, and the next
            // read into it waits for both.
            if (hashThis) meter.hash(bytes);
            await written;
          }
        } finally {
          await part.close();
        }
      }
      await out.close();
    } catch (error) {
      await out.close().catch(() => undefined);
      await removeQuietly(file);
      throw error;
    }
    return { temporary: file, ...meter.result() };
  }

  async sweepTemporary(olderThan: number): Promise<void> {
    await this.#tmp.sweep(olderThan);
  }

  removeTemporaryOfStopped(startedAt: number): Promise<number> {
    return this.#tmp.removeOfStopped(startedAt);
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
