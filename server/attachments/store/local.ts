/**
 * `LocalFileStore`, the back end on this machine's disk under `$DATA_DIR` (`STORAGE_URL` unset):
 * stored files under their content address, and the chunks of unfinished uploads written in
 * place into one data file per upload, so that the assembly of a file sent in order copies
 * nothing. What it promises is the `FileStore` contract (file-store.ts).
 */
import type { Stats } from 'node:fs';
import { access, constants, link, lstat, mkdir, open, readdir, readFile, readlink, rm, stat, symlink, unlink, writeFile, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AppError } from '../../../shared/errors.ts';
import { checkRoom } from '../../free-space.ts';
import { ownerIsGone, PROCESS_OWNER } from '../owners.ts';
import { ASSEMBLY_BUFFER_BYTES, removeQuietly, writeAll } from './disk.ts';
import { FileBody } from './file-body.ts';
import type { Assembled, AssemblyPiece, ByteRange, ChunkSlot, FileStore, HashedPrefix, Received, ReceiveOptions, StoredInfo } from './file-store.ts';
import { HEAD_BYTES, Meter } from './meter.ts';
import { checkUploadId, storedName, urlOf } from './names.ts';
import { SlotWriter } from './slot-writer.ts';
import { TemporaryFolder } from './temporary-folder.ts';

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
 *
 * tus uploads use the same data file with explicit positions (`slotAt`: a PATCH's bytes go at
 * its offset), and the parts of a parallel tus upload share one data file (`shareData`: hard
 * links to the first part's), each writing at its place in it; their final upload is that file
 * when its chunks follow one another from 0 and no upload outside it shares the file (its link
 * count). See ../tus-spans.ts.
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

  /** Writable, with room (`checkRoom`): a full disk takes no file. */
  async check(): Promise<void> {
    for (const dir of [this.#files, this.#chunks]) await access(dir, constants.W_OK);
    await this.#tmp.check();
    await checkRoom(this.#files);
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
    return range ? new FileBody(handle, range.start, range.end + 1) : new FileBody(handle, 0, Infinity);
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
    return this.#slot(uploadId, index, position, layout.stride);
  }

  /**
   * Only after a part in place (index − 1), or as the first (index 1): once a part was kept apart
   * (its place was held by a request that had lost its upload, and may still be writing from
   * there on), every later one is kept apart too, and nothing is ever written again where that
   * request may still write.
   */
  async slotAt(uploadId: string, index: number, position: number, room: number): Promise<ChunkSlot | null> {
    if (!Number.isSafeInteger(index) || index < 1 || !Number.isSafeInteger(position) || position < 0 || !(room > 0)) return null;
    if (index > 1) {
      const before = await this.#partOf(uploadId, index - 1).catch(() => null);
      if (!before || !('position' in before)) return null;
    }
    await mkdir(this.#chunkDir(uploadId), { recursive: true });
    return this.#slot(uploadId, index, position, room);
  }

  async #slot(uploadId: string, index: number, position: number, room: number): Promise<ChunkSlot | null> {
    const claim = this.#claimPath(uploadId, index);
    if (!(await this.#claim(claim))) return null;
    // A chunk stored already (a retry) is never written over: its copy is received apart and
    // dropped. Nor is a data file whose assembly has begun (`sealed`, made before the assembly
    // looks for claims: whichever of the two comes second sees the other).
    if ((await this.#exists(this.#chunkPath(uploadId, index))) || (await this.#exists(this.#sealPath(uploadId)))) {
      await removeQuietly(claim);
      return null;
    }
    return { uploadId, index, position, room, claim };
  }

  /**
   * A hard link to the span's data file, made when a partial upload is created. The span's first
   * upload makes the file (empty). Whichever comes second of this link and the assembly's seal of
   * the span's first upload sees the other: an assembly counts the file's links after sealing, and
   * a link made after the seal is taken back.
   */
  async shareData(uploadId: string, spanId: string): Promise<boolean> {
    await mkdir(this.#chunkDir(uploadId), { recursive: true });
    const spanData = this.#dataPath(spanId);
    if (uploadId === spanId) {
      await (await open(spanData, 'a', 0o600)).close();
      return true;
    }
    try {
      await link(spanData, this.#dataPath(uploadId));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'EEXIST') return false;
      throw error;
    }
    if (await this.#exists(this.#sealPath(spanId))) {
      await removeQuietly(this.#dataPath(uploadId));
      return false;
    }
    return true;
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
   * in order to one process), and it is linked under a temporary name. The chunks may be of
   * several uploads (the parts of a tus upload sent in parallel) whose data files are one file,
   * linked by `shareData`: it is the file too when no other upload shares it.
   *
   * Otherwise into a new temporary file (opened exclusively), a megabyte at a time through one
   * buffer: a stream's 64 KiB pieces made this copy take twice as long, and ten assemblies at
   * once hold ten megabytes. Each piece is hashed while it is being written (the write runs on
   * libuv's threads), and the first `hashed.chunks` chunks not at all: the uploads service hashed
   * them as they arrived.
   */
  async assemble(uploadId: string, chunks: AssemblyPiece[], maxBytes: number, hashed?: HashedPrefix): Promise<Assembled> {
    const parts: Array<ChunkPart & { of: string }> = [];
    for (const chunk of chunks) {
      // Spans here share a data file (`shareData`); only S3's are multipart uploads.
      if (typeof chunk === 'object' && 'span' in chunk) throw new Error('no span is a multipart upload on the local disk');
      const of = typeof chunk === 'number' ? uploadId : chunk.uploadId;
      parts.push({ ...(await this.#partOf(of, typeof chunk === 'number' ? chunk : chunk.index)), of });
    }
    const meter = new Meter(maxBytes, hashed?.hash ?? true, true);
    let end = 0;
    const inPlace = parts.every((part) => {
      const follows = 'position' in part && part.position === end;
      if ('position' in part) end += part.size;
      return follows;
    });
    const data = inPlace ? await this.#sealedData([...new Set(parts.map((part) => part.of))]) : null;
    if (data) return this.#assembleInPlace(data, parts as Array<{ position: number; size: number }>, meter, hashed?.chunks ?? 0);

    const file = this.#tmp.newPath();
    const buffer = Buffer.allocUnsafe(ASSEMBLY_BUFFER_BYTES);
    const out = await open(file, 'wx', 0o600);
    const dataFiles = new Map<string, FileHandle>();
    try {
      for (const [position, part] of parts.entries()) {
        const hashThis = position >= (hashed?.chunks ?? 0);
        const copy = async (handle: FileHandle, from: number, length: number) => {
          for (let offset = 0; offset < length; ) {
            const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, length - offset), from + offset);
            if (bytesRead === 0) throw new Error(`chunk of ${part.of} shorter than recorded`);
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
          let handle = dataFiles.get(part.of);
          if (!handle) dataFiles.set(part.of, (handle = await open(this.#dataPath(part.of), 'r')));
          await copy(handle, part.position, part.size);
        }
      }
      await out.close();
    } catch (error) {
      await out.close().catch(() => undefined);
      await removeQuietly(file);
      throw error;
    } finally {
      for (const handle of dataFiles.values()) await handle.close().catch(() => undefined);
    }
    return { temporary: file, ...meter.result() };
  }

  /**
   * Before the data file becomes the stored file (the same inode, until the chunks are removed),
   * no request may write into it again: new claims are refused once `sealed` is there, and one
   * already held (a request for an index outside the upload, under way; or a claim left by a
   * stopped process) means the file is copied instead. False then, or when the upload's folder
   * is gone.
   */
  async #seal(uploadId: string): Promise<boolean> {
    try {
      await writeFile(this.#sealPath(uploadId), '', { mode: 0o600 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw error;
    }
    return !(await readdir(this.#chunkDir(uploadId))).some((name) => name.endsWith('.claim'));
  }

  /**
   * The data file of these uploads, sealed, when it may become the stored file: one file that
   * exactly these uploads have (an upload's own, or the one the parts of a parallel upload
   * share): no other upload shares it, as its link count says (`shareData` takes back a link made
   * after the seal). Null otherwise: copied then. Each file is opened before it is asked its
   * links, so a file system that caches attributes (NFS) answers afresh.
   */
  async #sealedData(uploads: string[]): Promise<string | null> {
    for (const upload of uploads) if (!(await this.#seal(upload))) return null;
    const files = await Promise.all(uploads.map((upload) => this.#freshStat(this.#dataPath(upload))));
    const first = files[0];
    const one = first !== null && first !== undefined && files.every((f) => f !== null && f.ino === first.ino && f.dev === first.dev);
    return one && first.nlink === uploads.length ? this.#dataPath(uploads[0]!) : null;
  }

  async #freshStat(file: string): Promise<Stats | null> {
    const handle = await open(file, 'r').catch(() => null);
    if (!handle) return null;
    try {
      return await handle.stat();
    } finally {
      await handle.close();
    }
  }

  async #assembleInPlace(dataPath: string, parts: Array<{ position: number; size: number }>, meter: Meter, hashedChunks: number): Promise<Assembled> {
    const size = parts.reduce((sum, part) => sum + part.size, 0);
    const hashedBytes = parts.slice(0, hashedChunks).reduce((sum, part) => sum + part.size, 0);
    const data = await open(dataPath, 'r+');
    const file = this.#tmp.newPath();
    try {
      const buffer = Buffer.allocUnsafe(Math.min(ASSEMBLY_BUFFER_BYTES, Math.max(HEAD_BYTES, size - hashedBytes)));
      const feed = async (from: number, to: number, hash: boolean) => {
        for (let offset = from; offset < to; ) {
          const { bytesRead } = await data.read(buffer, 0, Math.min(buffer.length, to - offset), offset);
          if (bytesRead === 0) throw new Error(`data file ${dataPath} shorter than its chunks`);
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
      await link(dataPath, file);
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
   * Also the claims that processes of this kernel held when they stopped (a chunk cut by the
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
