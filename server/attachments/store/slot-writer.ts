/**
 * `SlotWriter`, the local back end's writer of a chunk into its claimed slot of the upload's data
 * file (see `LocalFileStore` in local.ts). Apart from the store because it is a stream of its
 * own, with its own handles and its own way of spilling to a temporary file.
 */
import { constants as fsConstants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { ASSEMBLY_BUFFER_BYTES, writeAll } from './disk.ts';
import type { ChunkSlot } from './file-store.ts';

/**
 * Writes a chunk into its slot of the data file with positional writes (opened without
 * truncating, created if the first chunk's link has not made it yet). Past the slot's room it
 * copies what it wrote into a temporary file and goes on there (`spilled`). `settled` resolves
 * once no write is pending and every handle is closed, however it ended.
 */
export class SlotWriter extends Writable {
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
