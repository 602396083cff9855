/**
 * The contract between the attachment services and where files live: the `FileStore` interface
 * and the small types that cross it. Types only, so that the services, the HTTP adapter and both
 * back ends (`local.ts`, `s3.ts`) can all import it without importing one another.
 */
import type { Hash } from 'node:crypto';
import type { Readable } from 'node:stream';

/** A file received into this machine's temporary folder: its path, length, SHA-1 and first bytes. */
export interface Received {
  path: string;
  size: number;
  sha1: string;
  /** The first bytes, to check a PDF's `%PDF-` signature. */
  head: Buffer;
  /**
   * When `receive` was given a SHA-1 to continue (`continueHash`): that hash, now also over this
   * file's bytes, not digested. The uploads service keeps it as the hash of the chunks so far.
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
 * What the uploads service has already hashed of the file being assembled: the first `chunks`
 * chunks (in the order given to `assemble`), as files this process stored and nothing since
 * replaced (a stored chunk never is). The assembly hashes only the rest, into `hash`, which it
 * digests: give it a hash no one else will use again.
 */
export interface HashedPrefix {
  chunks: number;
  hash: Hash;
}

/** A chunk of a given upload. */
export interface ChunkRef {
  uploadId: string;
  index: number;
}

/**
 * A byte range (both ends included) of the object a span's multipart upload became (S3,
 * `settleSpan`): where a part of a parallel tus upload kept in it lies.
 */
export interface SpanPiece {
  span: string;
  range: ByteRange;
}

/** What an assembly is made of, in order: chunks of the upload, chunks of others, ranges of settled spans. */
export type AssemblyPiece = number | ChunkRef | SpanPiece;

/** A span sent as an S3 multipart upload: the span's id and the multipart upload's. */
export interface SpanUpload {
  id: string;
  uploadId: string;
}

/** A part of a span's multipart upload: its number, the store's ETag for it, its length. */
export interface SpanPart {
  part: number;
  etag: string;
  size: number;
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
  /**
   * The largest file the store can keep, when it has a limit of its own: an S3 bucket stores and
   * copies one object of at most 5 GiB in one request (`PutObject`, `CopyObject`). A field's
   * limit is cut to it (`UploadsService.target`), so a larger file is refused (413) as it arrives.
   */
  readonly maxFileBytes?: number;
  init(): Promise<void>;
  /**
   * Throws unless the store can be used now: its folders are there and writable (the local disk),
   * its bucket answers with the credentials given (S3), and this machine's temporary folder is
   * there. The readiness check (`GET /health/ready`) asks it.
   */
  check(): Promise<void>;
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
  /**
   * A chunk's place at a given position of its upload's data file, at most `room` bytes, claimed
   * for this request, or null (then it is received into a temporary file). Only the local store
   * has one: a tus PATCH's bytes go at its upload's offset.
   */
  slotAt?(uploadId: string, index: number, position: number, room: number): Promise<ChunkSlot | null>;
  /**
   * Makes `uploadId`'s data file the very file of `spanId`'s (the first of a span: pass its own
   * id to make it), so that parts of one file sent in parallel are written side by side in it at
   * the positions given to `slotAt`. False when it cannot be (the first upload's file is gone, or
   * its assembly began): the upload's bytes then go to a file of its own, at the same positions.
   */
  shareData?(uploadId: string, spanId: string): Promise<boolean>;
  /**
   * S3 only (the local disk has `shareData`): the parts of a parallel tus upload, sent as the
   * parts of one multipart upload (`tus-spans.ts`). `openSpan` begins it and answers its id.
   */
  openSpan?(spanId: string): Promise<string>;
  /** Sends a received file as part `part` of the span's multipart upload and answers its ETag. The received file stays: the caller removes it. */
  putSpanPart?(received: Received, span: SpanUpload, part: number): Promise<string>;
  /**
   * Completes the span's multipart upload with exactly `parts` (in their numbers' order), once: a
   * second call, here or in another process, finds it done. Its pieces are then `SpanPiece`s.
   */
  settleSpan?(span: SpanUpload, parts: SpanPart[]): Promise<void>;
  /** Removes what the span left in the store: its multipart upload, or the object it became. */
  dropSpan?(span: SpanUpload): Promise<void>;
  removeChunk(uploadId: string, index: number): Promise<void>;
  removeChunks(uploadId: string): Promise<void>;
  /** The upload ids that have chunks stored. */
  chunkUploads(): Promise<string[]>;
  /**
   * Concatenates the chunks, in order, under a temporary name, hashing as it goes and never
   * holding the file in memory (the local store links chunks written in place instead of copying
   * them); past `maxBytes` it stops with a 413. Nothing is left on failure. A chunk is an index
   * of `uploadId`, or a chunk of another upload (`ChunkRef`: the parts of tus uploads sent in
   * parallel, assembled as their final upload without being moved first; on the local disk,
   * when they were written side by side in one shared data file, in order, that file is linked).
   */
  assemble(uploadId: string, chunks: AssemblyPiece[], maxBytes: number, hashed?: HashedPrefix): Promise<Assembled>;
  /** Stores an assembled file under its content address (as `keep` does) and drops its temporary copy. */
  keepAssembled(file: Assembled, extension: string): Promise<string>;
  discard(file: Assembled): Promise<void>;

  /** Removes the chunks of uploads not in `live` that were last written before `olderThan`. */
  sweepOrphanChunks(live: Set<string>, olderThan: number): Promise<void>;
  /** Removes temporary files (and assemblies) older than `olderThan` (ms since the epoch), left by a crash. */
  sweepTemporary(olderThan: number): Promise<void>;
  /**
   * At start: removes this machine's temporary files of processes that stopped (see ../owners.ts),
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
