import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { link, mkdir, open, readdir, rm, stat, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { type Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AppError } from '../../shared/errors.ts';
import { fileUrlExtension, tooLargeMessage } from '../../shared/forms.ts';
import { ownerIsGone, PROCESS_OWNER } from './owners.ts';

/** A file received into the temporary folder: its path, length, SHA-1 and first bytes. */
export interface Received {
  path: string;
  size: number;
  sha1: string;
  /** The first bytes, to check a PDF's `%PDF-` signature. */
  head: Buffer;
}

const HEAD_BYTES = 8;
/** How much of a chunk file the assembly reads at once. */
const ASSEMBLY_BUFFER_BYTES = 1024 * 1024;

/**
 * Content-addressed file storage under `$DATA_DIR`: `files/pdf/<sha1>.pdf` and
 * `files/attachment/<sha1>.<ext>`, with `tmp/` for files being received and `chunks/` for the
 * chunks of unfinished uploads. Every path is built from a validated hex hash, a validated
 * extension or a server-made id; nothing a client sends is ever joined into a path.
 */
export class FileStore {
  readonly #files: string;
  readonly #tmp: string;
  readonly #chunks: string;
  readonly #owner: string;

  constructor(dataDir: string, owner = PROCESS_OWNER) {
    this.#files = path.join(dataDir, 'files');
    this.#tmp = path.join(dataDir, 'tmp');
    this.#chunks = path.join(dataDir, 'chunks');
    this.#owner = owner;
  }

  /** A new temporary file's path, named after the process writing it (`<owner>~<uuid>`). */
  #temporary(): string {
    return path.join(this.#tmp, `${this.#owner}~${randomUUID()}`);
  }

  async init(): Promise<void> {
    for (const dir of [path.join(this.#files, 'pdf'), path.join(this.#files, 'attachment'), this.#tmp, this.#chunks]) {
      await mkdir(dir, { recursive: true });
    }
  }

  /**
   * Streams `source` into a new temporary file (opened exclusively), hashing and counting as the
   * bytes arrive. Past `maxBytes` it stops with a 413 and the temporary file is removed; so it is
   * when the source fails (the client went away). `hash: false` skips the SHA-1 (5 ms for a 5 MB
   * chunk, whose own hash nothing uses) and answers `sha1: ''`.
   */
  async receive(source: Readable, maxBytes: number, opts: { hash?: boolean } = {}): Promise<Received> {
    const file = this.#temporary();
    const hash = opts.hash === false ? null : createHash('sha1');
    let size = 0;
    const head: Buffer[] = [];
    let headLength = 0;
    const meter = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        size += chunk.length;
        if (size > maxBytes) {
          done(AppError.tooLarge(tooLargeMessage(maxBytes), { path: 'file' }));
          return;
        }
        if (headLength < HEAD_BYTES) {
          head.push(chunk.subarray(0, HEAD_BYTES - headLength));
          headLength += Math.min(chunk.length, HEAD_BYTES - headLength);
        }
        hash?.update(chunk);
        done(null, chunk);
      },
    });
    try {
      await pipeline(source, meter, createWriteStream(file, { flags: 'wx', mode: 0o600 }));
    } catch (error) {
      await removeQuietly(file);
      throw error;
    }
    return { path: file, size, sha1: hash?.digest('hex') ?? '', head: Buffer.concat(head) };
  }

  /** The URL a stored file is known by. */
  urlOf(sha1: string, extension: string): string {
    return extension === 'pdf' ? `/pdf/${sha1}.pdf` : `/attachment/${sha1}.${extension}`;
  }

  /** Where the file of a URL lives, or null when the URL is not one of ours. */
  pathOf(url: string): string | null {
    const extension = fileUrlExtension(url);
    if (extension === null) return null;
    const name = url.slice(url.lastIndexOf('/') + 1);
    return path.join(this.#files, extension === 'pdf' && url.startsWith('/pdf/') ? 'pdf' : 'attachment', name);
  }

  /**
   * Moves a received file into its content-addressed place with an atomic link; the same bytes
   * are stored once (a second copy is simply dropped). Returns the URL.
   */
  async keep(received: Received, extension: string): Promise<string> {
    const url = this.urlOf(received.sha1, extension);
    const target = this.pathOf(url);
    if (!target) throw new Error(`not a storable URL: ${url}`);
    // A file already stored under this name stays: link() refuses to replace it. The same
    // name is the same SHA-1, so normally the same bytes; never replacing also means that two
    // different files made to share a SHA-1 cannot swap a paper already submitted.
    try {
      await link(received.path, target);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    await unlink(received.path);
    return url;
  }

  /** Whether a stored file exists, with its size. */
  async sizeOf(url: string): Promise<number | null> {
    const file = this.pathOf(url);
    if (!file) return null;
    try {
      return (await stat(file)).size;
    } catch {
      return null;
    }
  }

  // ---- chunks ----------------------------------------------------------------------------------

  #chunkDir(uploadId: string): string {
    if (!/^[0-9a-f-]{36}$/.test(uploadId)) throw new Error(`not an upload id: ${uploadId}`);
    return path.join(this.#chunks, uploadId);
  }

  chunkPath(uploadId: string, index: number): string {
    return path.join(this.#chunkDir(uploadId), String(Math.trunc(index)));
  }

  /**
   * Moves a received chunk into place; a chunk already there (a retry) is kept as it was:
   * link() refuses to replace it. Answers whether this call placed it.
   */
  async keepChunk(received: Received, uploadId: string, index: number): Promise<boolean> {
    await mkdir(this.#chunkDir(uploadId), { recursive: true });
    try {
      await link(received.path, this.chunkPath(uploadId, index));
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      return false;
    } finally {
      await removeQuietly(received.path);
    }
  }

  /** Removes chunk folders that belong to no upload and were last touched before `olderThan`. */
  async sweepOrphanChunks(live: Set<string>, olderThan: number): Promise<void> {
    for (const name of await readdir(this.#chunks).catch(() => [] as string[])) {
      if (live.has(name) || !/^[0-9a-f-]{36}$/.test(name)) continue;
      const info = await stat(path.join(this.#chunks, name)).catch(() => null);
      if (info && info.mtimeMs < olderThan) await rm(path.join(this.#chunks, name), { recursive: true, force: true });
    }
  }

  /**
   * Concatenates the chunks, in order, into a new temporary file (opened exclusively), hashing as
   * it goes. A megabyte at a time through one buffer: a stream's 64 KiB pieces made this copy
   * take twice as long (`npm run bench`, row 6), and ten assemblies at once hold ten megabytes.
   * Past `maxBytes` it stops with a 413; on any failure the temporary file is removed.
   */
  async assemble(uploadId: string, indexes: number[], maxBytes: number): Promise<Received> {
    const file = this.#temporary();
    const hash = createHash('sha1');
    const buffer = Buffer.allocUnsafe(ASSEMBLY_BUFFER_BYTES);
    let size = 0;
    let head = Buffer.alloc(0);
    const out = await open(file, 'wx', 0o600);
    try {
      for (const index of indexes) {
        const part = await open(this.chunkPath(uploadId, index), 'r');
        try {
          for (let read = await part.read(buffer, 0, buffer.length); read.bytesRead > 0; read = await part.read(buffer, 0, buffer.length)) {
            size += read.bytesRead;
            if (size > maxBytes) throw AppError.tooLarge(tooLargeMessage(maxBytes), { path: 'file' });
            const bytes = buffer.subarray(0, read.bytesRead);
            if (head.length < HEAD_BYTES) head = Buffer.concat([head, bytes.subarray(0, HEAD_BYTES - head.length)]);
            hash.update(bytes);
            await writeAll(out, bytes);
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
    return { path: file, size, sha1: hash.digest('hex'), head };
  }

  async removeChunks(uploadId: string): Promise<void> {
    await rm(this.#chunkDir(uploadId), { recursive: true, force: true });
  }

  /** Temporary files older than `olderThan` (ms since the epoch), left by a crash. */
  async sweepTemporary(olderThan: number): Promise<void> {
    for (const name of await readdir(this.#tmp).catch(() => [] as string[])) {
      const file = path.join(this.#tmp, name);
      const info = await stat(file).catch(() => null);
      if (info && info.mtimeMs < olderThan) await removeQuietly(file);
    }
  }

  /**
   * At start: removes the temporary files of processes that stopped (a crash in the middle of
   * receiving or assembling), and unnamed ones from before `startedAt`. Another running
   * process's files are left alone.
   */
  async removeTemporaryOfStopped(startedAt: number): Promise<number> {
    let removed = 0;
    for (const name of await readdir(this.#tmp).catch(() => [] as string[])) {
      const file = path.join(this.#tmp, name);
      const owner = name.includes('~') ? name.slice(0, name.indexOf('~')) : null;
      if (owner !== null ? !ownerIsGone(owner) : ((await stat(file).catch(() => null))?.mtimeMs ?? Infinity) >= startedAt) continue;
      await removeQuietly(file);
      removed += 1;
    }
    return removed;
  }

  /** The upload ids that have a chunk folder. */
  async chunkFolders(): Promise<string[]> {
    return (await readdir(this.#chunks).catch(() => [] as string[])).filter((name) => /^[0-9a-f-]{36}$/.test(name));
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

