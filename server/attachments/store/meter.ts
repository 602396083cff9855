/**
 * `Meter`, the one gauge every file a store takes in passes through (received or assembled): it
 * counts, hashes and keeps the first bytes, and stops at the field's limit. One class, so that
 * both back ends and every way in refuse a file past its limit with the same 413.
 */
import { createHash, type Hash } from 'node:crypto';
import { Transform } from 'node:stream';
import { AppError } from '../../../shared/errors.ts';
import { tooLargeMessage } from '../../../shared/forms.ts';
import { bytesReceived } from './received-buffers.ts';

/** How many first bytes are kept: enough for a PDF's `%PDF-` signature. */
export const HEAD_BYTES = 8;

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
    bytesReceived(chunk.length);
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
