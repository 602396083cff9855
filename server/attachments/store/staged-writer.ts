/**
 * `StagedFileWriter`, how a received file reaches this machine's disk: through two buffers of
 * its own rather than holding on to the pieces it is given. Apart from the temporary folder
 * because it is a stream with its own buffers, handle and pool.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { writeAll } from './disk.ts';

/** The largest staging buffer: what goes to the disk in one write once a file is under way. */
const STAGE_BYTES = 1024 * 1024;
/**
 * A file's first staging buffer, each next one twice the last, up to `STAGE_BYTES`: a slow or
 * small upload holds no more than a socket's read would, and the first bytes reach the disk soon.
 */
const FIRST_STAGE_BYTES = 64 * 1024;
/** Staging buffers of the largest size kept for the next files once a writer is done with them (4 MB at most; two writers at once reuse them). */
const POOL_KEPT = 4;
const pool: Buffer[] = [];

const take = (size: number) => (size === STAGE_BYTES ? pool.pop() : undefined) ?? Buffer.allocUnsafeSlow(size);
const giveBack = (buffer: Buffer) => {
  if (buffer.length === STAGE_BYTES && pool.length < POOL_KEPT) pool.push(buffer);
};

/**
 * Writes a stream into a new file (opened exclusively), copying each piece into one of two
 * staging buffers and writing a buffer whole while the other fills. The buffers grow from 64 KiB
 * to 1 MiB as the file does, so a small or slow upload holds no more than before.
 *
 * Why a copy: a request body arrives in pieces of 64 KiB, each one's bytes outside the heap. A
 * file stream keeps each piece until its write is done, so under a busy disk pieces outlive a
 * young-generation collection or two, are promoted, and go only with a full collection, which
 * the bytes they hold outside the heap then bring on about once per 64 MB received (a quarter of
 * an upload's time here, with the server's heap to mark each time). Copied at once, every piece
 * dies young, and the disk gets one write per megabyte instead of one per piece.
 */
export class StagedFileWriter extends Writable {
  readonly #path: string;
  #handle: FileHandle | null = null;
  #stage: Buffer | null = null;
  #filled = 0;
  /** The write under way, if any (of the other buffer). */
  #pending: Promise<void> = Promise.resolve();
  #spare: Buffer | null = null;
  #nextSize = FIRST_STAGE_BYTES;
  /** Set once the handle is closing: a flush that was waiting then stops, and no buffer is filled any more. */
  #closed = false;

  constructor(path: string) {
    super({ highWaterMark: STAGE_BYTES });
    this.#path = path;
  }

  override _construct(done: (error?: Error | null) => void): void {
    open(this.#path, 'wx', 0o600).then((handle) => {
      this.#handle = handle;
      done();
    }, done);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.#put(chunk).then(() => done(), done);
  }

  async #put(chunk: Buffer): Promise<void> {
    for (let offset = 0; offset < chunk.length; ) {
      if (this.#closed) throw new Error('the file being received was closed');
      this.#stage ??= this.#newStage();
      const copied = chunk.copy(this.#stage, this.#filled, offset);
      this.#filled += copied;
      offset += copied;
      if (this.#filled === this.#stage.length) await this.#flush();
    }
  }

  /** The next staging buffer: the one written last when it is of the size now due. */
  #newStage(): Buffer {
    const size = this.#nextSize;
    this.#nextSize = Math.min(STAGE_BYTES, size * 2);
    const spare = this.#spare;
    this.#spare = null;
    if (spare?.length === size) return spare;
    if (spare) giveBack(spare);
    return take(size);
  }

  /** Sends the full stage to the disk once the write before it is done, and goes on filling the other buffer meanwhile. */
  async #flush(): Promise<void> {
    const stage = this.#stage;
    if (!stage || this.#filled === 0) return;
    const bytes = stage.subarray(0, this.#filled);
    await this.#pending;
    if (this.#closed) throw new Error('the file being received was closed');
    this.#stage = null;
    this.#filled = 0;
    const written = writeAll(this.#handle!, bytes).then(() => {
      this.#spare = stage;
    });
    // Awaited by the next flush, the end or a destroy; until then a failure must not be unhandled.
    written.catch(() => undefined);
    this.#pending = written;
  }

  override _final(done: (error?: Error | null) => void): void {
    this.#flush()
      .then(() => this.#pending)
      .then(() => this.#close())
      .then(() => done(), done);
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    // A write may still be under way: the handle closes after it.
    void this.#pending
      .catch(() => undefined)
      .then(() => this.#close())
      .then(() => done(error), () => done(error));
  }

  async #close(): Promise<void> {
    this.#closed = true;
    for (const buffer of [this.#stage, this.#spare]) if (buffer) giveBack(buffer);
    this.#stage = null;
    this.#spare = null;
    const handle = this.#handle;
    this.#handle = null;
    await handle?.close();
  }
}
