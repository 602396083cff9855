/**
 * `RunningHashes`: the SHA-1 of each upload's first chunks, kept in this process's memory as
 * those chunks arrive, so that the assembly hashes only what was not. Apart from the uploads
 * service because it is state with rules of its own (which chunk may continue a hash, when a hash
 * stops), and only ever a shortcut: without it the assembly hashes the whole file.
 */
import { createHash, type Hash } from 'node:crypto';
import type { ChunkedUpload } from './repository.ts';
import type { HashedPrefix } from './store/file-store.ts';

/**
 * The SHA-1 of an upload's first chunks, from `start` up to `next` (excluded), over the bytes of
 * the chunk files its uploads service stored: each went into it as it arrived, so that the
 * assembly hashes only what was not (nothing, for a client sending in order to one process).
 * Another process's chunks, or chunks out of order, stop it where it is: the assembly, wherever
 * it runs, hashes the rest from the files. A stored chunk is never replaced, so the hash stays
 * true.
 */
interface RunningHash {
  uploadId: string;
  start: number;
  next: number;
  hash: Hash;
}
/** At most this many running hashes are kept (a few hundred bytes each): the oldest goes first. */
const RUNNING_HASHES = 1000;

type UploadKey = Pick<ChunkedUpload, 'id' | 'profileId' | 'clientUploadId'>;

export class RunningHashes {
  /** By `<profile id>\n<client upload id>`: see RunningHash. */
  readonly #running = new Map<string, RunningHash>();
  /** Where each hash handed out by `handOut` starts: the chunk index its first bytes are of. */
  readonly #handedOut = new WeakMap<Hash, number>();

  /**
   * A copy of the upload's running hash when chunk `index` is the next one, or a new hash for a
   * first chunk (index 0, or 1 while the client's count is not known), for its bytes to go into
   * as they arrive; none otherwise. It counts only once `advance` is given it.
   */
  handOut(profileId: string, clientUploadId: string, index: number): Hash | undefined {
    const running = this.#running.get(`${profileId}\n${clientUploadId}`);
    let hash: Hash;
    let start: number;
    if (running && running.next === index) {
      hash = running.hash.copy();
      start = running.start;
    } else if (index <= 1 && (!running || index < running.start)) {
      hash = createHash('sha1');
      start = index;
    } else {
      return undefined;
    }
    this.#handedOut.set(hash, start);
    return hash;
  }

  /** After a chunk this request received was stored and recorded: its hash (`Received.continued`) becomes the upload's running hash, if it continues it. */
  advance(upload: ChunkedUpload, index: number, hash: Hash | undefined): void {
    const start = hash ? this.#handedOut.get(hash) : undefined;
    if (!hash || start === undefined) return;
    const key = `${upload.profileId}\n${upload.clientUploadId}`;
    const running = this.#running.get(key);
    const fresh = start === index && (!running || running.uploadId !== upload.id || index < running.start);
    const continues = running?.uploadId === upload.id && running.start === start && running.next === index;
    if (!fresh && !continues) return;
    this.#running.delete(key);
    this.#running.set(key, { uploadId: upload.id, start, next: index + 1, hash });
    if (this.#running.size > RUNNING_HASHES) {
      const oldest = this.#running.keys().next();
      if (!oldest.done) this.#running.delete(oldest.value);
    }
  }

  /** What of an upload's file was hashed already, for its assembly (a copy: an assembly that fails may be redone). */
  prefixFor(upload: ChunkedUpload, indexes: number[]): HashedPrefix | undefined {
    const running = this.#running.get(`${upload.profileId}\n${upload.clientUploadId}`);
    if (!running || running.uploadId !== upload.id || running.start !== indexes[0]) return undefined;
    return { chunks: Math.min(running.next - running.start, indexes.length), hash: running.hash.copy() };
  }

  forget(upload: UploadKey): void {
    const key = `${upload.profileId}\n${upload.clientUploadId}`;
    if (this.#running.get(key)?.uploadId === upload.id) this.#running.delete(key);
  }

  /** Forgets the running hashes of uploads that were swept. */
  forgetUploads(ids: Set<string>): void {
    for (const [key, running] of this.#running) if (ids.has(running.uploadId)) this.#running.delete(key);
  }
}
