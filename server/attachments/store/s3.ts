/**
 * `S3FileStore`, the back end in an S3-compatible bucket (`STORAGE_URL=s3://…`), which server
 * processes on several machines can share. Only `openFileStore` (open.ts) loads it, with
 * `import()`: the AWS SDK then costs nothing to a process that stores on its own disk.
 */
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { once } from 'node:events';
import { PassThrough, Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  type _Object,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { AppError } from '../../../shared/errors.ts';
import type { StorageTarget } from '../../config.ts';
import { PROCESS_OWNER } from '../owners.ts';
import { removeQuietly } from './disk.ts';
import type { Assembled, AssemblyPiece, ByteRange, FileStore, HashedPrefix, Received, ReceiveOptions, SpanPart, SpanPiece, SpanUpload, StoredInfo } from './file-store.ts';
import { Meter } from './meter.ts';
import { checkUploadId, storedName, urlOf } from './names.ts';
import { TemporaryFolder } from './temporary-folder.ts';

/**
 * The parts an assembly is sent in (S3's smallest but for the last), and how many are in flight:
 * an assembly holds at most about (queue + 1) parts in memory, whatever the file's size.
 */
const PART_BYTES = 5 * 1024 * 1024;
const PARTS_IN_FLIGHT = 2;
/** How long a span's settling waits for another process completing it at the same time. */
const SETTLE_WAIT = { tries: 50, ms: 200 };

/**
 * Content-addressed file storage in an S3-compatible bucket, shared by every server process
 * whatever machine it runs on. Keys mirror the local layout, under the URL's prefix:
 * `files/pdf/<sha1>.pdf`, `files/attachment/<sha1>.<ext>`, `chunks/<upload id>/<index>`,
 * `tmp/<owner>~<uuid>` for assemblies under way, and `spans/<upload id>` for the parts of a
 * parallel tus upload sent as one multipart upload. A file being received is first written to this
 * machine's `$DATA_DIR/tmp` (the request's own), then sent to the bucket once checked.
 *
 * Never replacing a stored object: a key is checked (HEAD) before it is written, and the write
 * itself carries `If-None-Match: *`, which S3 refuses when the key exists meanwhile. A store that
 * ignores that header (s3rver, some older S3-compatible ones) leaves a narrow window in which two
 * processes storing the same content address at once both write it: the same SHA-1, so the same
 * bytes, short of a deliberate collision.
 *
 * What the bucket needs: the objects' read, write, delete and list permissions on the prefix,
 * and, advisably, a lifecycle rule that aborts incomplete multipart uploads (an assembly cut by a
 * crash leaves its parts, which a listing of objects does not show) after longer than twice
 * `UPLOAD_ABANDON_SECONDS`: a parallel tus upload's parts wait in one until its final upload.
 */
export class S3FileStore implements FileStore {
  /** S3's limit on one `PutObject` or `CopyObject`: 5 GiB. */
  readonly maxFileBytes = 5 * 1024 ** 3;
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #prefix: string;
  readonly #tmp: TemporaryFolder;
  readonly #owner: string;

  constructor(target: Extract<StorageTarget, { kind: 's3' }>, dataDir: string, owner = PROCESS_OWNER) {
    this.#client = new S3Client({
      region: target.region,
      endpoint: target.endpoint,
      forcePathStyle: target.forcePathStyle,
      // Since early 2025 the SDK adds CRC checksums to every write by default, as headers or as
      // trailers of an aws-chunked body, which several S3-compatible stores refuse or do not
      // check. Only the operations that require a checksum send one; the SHA-1 is ours anyway.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    this.#bucket = target.bucket;
    this.#prefix = target.prefix;
    this.#tmp = new TemporaryFolder(dataDir, owner);
    this.#owner = owner;
  }

  /** Checks the bucket is there and reachable with the credentials given: a wrong setting stops the start, not the first upload. */
  async init(): Promise<void> {
    await this.#tmp.init();
    try {
      await this.#client.send(new HeadBucketCommand({ Bucket: this.#bucket }));
    } catch (error) {
      throw new Error(`STORAGE_URL: the bucket ${this.#bucket} cannot be reached (${(error as Error).name}: ${(error as Error).message})`, { cause: error });
    }
  }

  async check(): Promise<void> {
    await this.#client.send(new HeadBucketCommand({ Bucket: this.#bucket }));
    await this.#tmp.check();
  }

  receive(source: Readable, maxBytes: number, opts: ReceiveOptions = {}): Promise<Received> {
    return this.#tmp.receive(source, maxBytes, opts);
  }

  #fileKey(url: string): string | null {
    const name = storedName(url);
    return name === null ? null : `${this.#prefix}files/${name}`;
  }

  #chunkKey(uploadId: string, index: number): string {
    return `${this.#chunkPrefix(uploadId)}${Math.trunc(index)}`;
  }

  #chunkPrefix(uploadId: string): string {
    return `${this.#prefix}chunks/${checkUploadId(uploadId)}/`;
  }

  async #exists(key: string): Promise<boolean> {
    try {
      await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: key }));
      return true;
    } catch (error) {
      if (isMissing(error)) return false;
      throw error;
    }
  }

  /** Writes a local file under `key` unless something is there. Answers whether it wrote it. */
  async #putOnce(key: string, file: string, size: number): Promise<boolean> {
    if (await this.#exists(key)) return false;
    try {
      await this.#client.send(
        new PutObjectCommand({ Bucket: this.#bucket, Key: key, Body: createReadStream(file), ContentLength: size, IfNoneMatch: '*' }),
      );
      return true;
    } catch (error) {
      if (isAlreadyThere(error)) return false;
      throw error;
    }
  }

  async #delete(key: string): Promise<void> {
    await this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: key }));
  }

  /** Every object under `prefix`, page by page. */
  async *#list(prefix: string): AsyncGenerator<_Object> {
    let token: string | undefined;
    do {
      const page = await this.#client.send(new ListObjectsV2Command({ Bucket: this.#bucket, Prefix: prefix, ContinuationToken: token }));
      yield* page.Contents ?? [];
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async keep(received: Received, extension: string): Promise<string> {
    const url = urlOf(received.sha1, extension);
    const key = this.#fileKey(url);
    if (!key) throw new Error(`not a storable URL: ${url}`);
    try {
      await this.#putOnce(key, received.path, received.size);
    } finally {
      await removeQuietly(received.path);
    }
    return url;
  }

  async info(url: string): Promise<StoredInfo | null> {
    const key = this.#fileKey(url);
    if (!key) return null;
    try {
      const head = await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: key }));
      return { size: Number(head.ContentLength ?? 0), modifiedAt: head.LastModified ?? new Date(0) };
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  async read(url: string, range?: ByteRange): Promise<Readable> {
    const key = this.#fileKey(url);
    if (!key) throw new AppError('NotFoundError', `File Not Found: ${url}`);
    try {
      return await this.#get(key, range);
    } catch (error) {
      if (isMissing(error)) throw new AppError('NotFoundError', `File Not Found: ${url}`);
      throw error;
    }
  }

  /** An object's bytes as a stream; a range is always sent with both ends (some stores read `bytes=-n` wrong). */
  async #get(key: string, range?: ByteRange): Promise<Readable> {
    const answer = await this.#client.send(
      new GetObjectCommand({ Bucket: this.#bucket, Key: key, Range: range ? `bytes=${range.start}-${range.end}` : undefined }),
    );
    if (!(answer.Body instanceof Readable)) throw new Error(`no readable body for ${key}`);
    return answer.Body;
  }

  // ---- chunks ----------------------------------------------------------------------------------

  async keepChunk(received: Received, uploadId: string, index: number): Promise<boolean> {
    try {
      return await this.#putOnce(this.#chunkKey(uploadId, index), received.path, received.size);
    } finally {
      await removeQuietly(received.path);
    }
  }

  async removeChunk(uploadId: string, index: number): Promise<void> {
    await this.#delete(this.#chunkKey(uploadId, index));
  }

  async removeChunks(uploadId: string): Promise<void> {
    for await (const object of this.#list(this.#chunkPrefix(uploadId))) if (object.Key) await this.#delete(object.Key);
  }

  async chunkUploads(): Promise<string[]> {
    return [...(await this.#chunksByUpload()).keys()];
  }

  /** The chunk objects, by upload id. */
  async #chunksByUpload(): Promise<Map<string, _Object[]>> {
    const found = new Map<string, _Object[]>();
    const prefix = `${this.#prefix}chunks/`;
    for await (const object of this.#list(prefix)) {
      const id = object.Key?.slice(prefix.length).split('/')[0] ?? '';
      if (!/^[0-9a-f-]{36}$/.test(id)) continue;
      found.set(id, [...(found.get(id) ?? []), object]);
    }
    return found;
  }

  async sweepOrphanChunks(live: Set<string>, olderThan: number): Promise<void> {
    for (const [id, objects] of await this.#chunksByUpload()) {
      if (live.has(id) || objects.some((o) => (o.LastModified?.getTime() ?? 0) >= olderThan)) continue;
      await this.removeChunks(id);
    }
  }

  /**
   * The pieces are read one after the other and go, through the SHA-1, into a multipart upload
   * to a temporary key: at most a few parts are ever in memory. Backpressure holds the reading
   * while the parts are sent; a failure of the upload stops the reading at once.
   *
   * When the pieces are a settled span's object, whole and in order (the parts of a parallel tus
   * upload named as they were sent), that object is the file: it is only read, for the SHA-1,
   * and becomes the assembly's temporary key.
   */
  async assemble(uploadId: string, chunks: AssemblyPiece[], maxBytes: number, hashed?: HashedPrefix): Promise<Assembled> {
    const whole = await this.#wholeSpan(chunks);
    if (whole) {
      const meter = new Meter(maxBytes);
      for await (const piece of await this.#get(whole)) meter.count(piece as Buffer);
      return { temporary: whole, ...meter.result() };
    }
    const key = `${this.#prefix}tmp/${this.#owner}~${randomUUID()}`;
    const meter = new Meter(maxBytes, hashed?.hash ?? true, true);
    const body = new PassThrough();
    const upload = new Upload({
      client: this.#client,
      params: { Bucket: this.#bucket, Key: key, Body: body },
      partSize: PART_BYTES,
      queueSize: PARTS_IN_FLIGHT,
    });
    const sent = upload.done();
    // Awaited below; until then a failure must not be an unhandled rejection.
    sent.catch(() => undefined);
    try {
      for (const [position, chunk] of chunks.entries()) {
        // The first `hashed.chunks` were hashed by the uploads service as they arrived.
        const hashThis = position >= (hashed?.chunks ?? 0);
        for await (const piece of await this.#pieceOf(uploadId, chunk)) {
          const bytes = piece as Buffer;
          meter.count(bytes, hashThis);
          if (!body.write(bytes)) await Promise.race([once(body, 'drain'), sent]);
        }
      }
      body.end();
      await sent;
    } catch (error) {
      body.destroy();
      // Stores without AbortMultipartUpload (s3rver) refuse the abort: the lifecycle rule is then the cleaner.
      await upload.abort().catch(() => undefined);
      await this.#delete(key).catch(() => undefined);
      throw error;
    }
    return { temporary: key, ...meter.result() };
  }

  /** A piece's bytes: a chunk object, or a range of a settled span's object. */
  async #pieceOf(uploadId: string, chunk: AssemblyPiece): Promise<Readable> {
    if (typeof chunk === 'number') return this.#get(this.#chunkKey(uploadId, chunk));
    if (!('span' in chunk)) return this.#get(this.#chunkKey(chunk.uploadId, chunk.index));
    try {
      return await this.#get(this.#spanKey(chunk.span), chunk.range);
    } catch (error) {
      if (isMissing(error)) throw spanGone();
      throw error;
    }
  }

  /** The span object's key when the pieces are all of it, in order; null otherwise. */
  async #wholeSpan(chunks: AssemblyPiece[]): Promise<string | null> {
    const pieces = chunks.filter((chunk): chunk is SpanPiece => typeof chunk === 'object' && 'span' in chunk);
    const span = pieces[0]?.span;
    if (!span || pieces.length !== chunks.length) return null;
    let next = 0;
    for (const piece of pieces) {
      if (piece.span !== span || piece.range.start !== next) return null;
      next = piece.range.end + 1;
    }
    const key = this.#spanKey(span);
    const size = await this.#sizeOf(key);
    if (size === null) throw spanGone();
    return size === next ? key : null;
  }

  async #sizeOf(key: string): Promise<number | null> {
    try {
      return Number((await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: key }))).ContentLength ?? 0);
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  // ---- spans: the parts of a parallel tus upload as the parts of one multipart upload ----------

  #spanKey(spanId: string): string {
    return `${this.#prefix}spans/${checkUploadId(spanId)}`;
  }

  async openSpan(spanId: string): Promise<string> {
    const answer = await this.#client.send(new CreateMultipartUploadCommand({ Bucket: this.#bucket, Key: this.#spanKey(spanId) }));
    if (!answer.UploadId) throw new Error('the store answered no multipart upload id');
    return answer.UploadId;
  }

  async putSpanPart(received: Received, span: SpanUpload, part: number): Promise<string> {
    const answer = await this.#client.send(
      new UploadPartCommand({
        Bucket: this.#bucket,
        Key: this.#spanKey(span.id),
        UploadId: span.uploadId,
        PartNumber: part,
        Body: createReadStream(received.path),
        ContentLength: received.size,
      }),
    );
    if (!answer.ETag) throw new Error('the store answered no ETag for a part');
    return answer.ETag;
  }

  /**
   * Completes the multipart upload (whose parts wait in the store until then: the bucket's rule
   * that aborts incomplete multipart uploads must give them longer than `UPLOAD_ABANDON_SECONDS`). A completion that fails may have been done already (by
   * another process at the same moment, or before a crash; a store then answers NoSuchUpload,
   * s3rver an internal error): the object, at the parts' length, says so; a moment is given to
   * one being completed. When the store refuses the parts as listed (`isRefusedAsSent`), or says
   * the multipart upload is gone and no object comes, they are gone (a 400: the client sends the
   * file again). Any other refusal is thrown as the store said it: a 503 to retry when it says
   * "not now" (`toAppError`), a 500 for a set-up to fix (access denied), and the parts stay.
   */
  async settleSpan(span: SpanUpload, parts: SpanPart[]): Promise<void> {
    const key = this.#spanKey(span.id);
    if (parts.length === 0) return this.#abort(span);
    const sorted = [...parts].sort((a, b) => a.part - b.part);
    const size = sorted.reduce((sum, part) => sum + part.size, 0);
    try {
      await this.#client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.#bucket,
          Key: key,
          UploadId: span.uploadId,
          MultipartUpload: { Parts: sorted.map((part) => ({ PartNumber: part.part, ETag: part.etag })) },
        }),
      );
    } catch (error) {
      // Refused as sent (a part's ETag or size): no other completion will make it. A refusal of
      // who asks (403, a set-up to fix) or a store busy or timing out is no verdict on the parts:
      // it is thrown as it is, and the parts stay for a later try.
      if (isRefusedAsSent(error)) throw spanGone();
      if (isClientError(error) && !isMissing(error)) throw error;
      for (let tries = 0; tries < SETTLE_WAIT.tries; tries += 1) {
        const found = await this.#sizeOf(key);
        if (found === size) return;
        if (found !== null) throw spanGone();
        await new Promise((resolve) => setTimeout(resolve, SETTLE_WAIT.ms));
      }
      if (isMissing(error)) throw spanGone();
      throw new AppError('ServiceUnavailableError', 'The parts of this upload are being joined: try again in a moment', { retryAfter: 1 });
    }
    if ((await this.#sizeOf(key)) !== size) throw spanGone();
  }

  async dropSpan(span: SpanUpload): Promise<void> {
    await this.#abort(span);
    await this.#delete(this.#spanKey(span.id));
  }

  /** Stores without AbortMultipartUpload (s3rver) refuse it: the bucket's lifecycle rule is then the cleaner. */
  async #abort(span: SpanUpload): Promise<void> {
    await this.#client.send(new AbortMultipartUploadCommand({ Bucket: this.#bucket, Key: this.#spanKey(span.id), UploadId: span.uploadId })).catch(() => undefined);
  }

  /**
   * Copies the assembly to its content address (a copy inside the store, up to 5 GB) unless a
   * file is already there, then removes the temporary key. A span's object stays until its last
   * upload goes (`dropSpan`): an assembly redone after a failure reads it again.
   */
  async keepAssembled(file: Assembled, extension: string): Promise<string> {
    const url = urlOf(file.sha1, extension);
    const key = this.#fileKey(url);
    if (!key) throw new Error(`not a storable URL: ${url}`);
    if (!(await this.#exists(key))) {
      try {
        await this.#client.send(
          new CopyObjectCommand({ Bucket: this.#bucket, Key: key, CopySource: `${this.#bucket}/${file.temporary.split('/').map(encodeURIComponent).join('/')}`, IfNoneMatch: '*' }),
        );
      } catch (error) {
        if (!isAlreadyThere(error)) throw error;
      }
    }
    await this.discard(file);
    return url;
  }

  async discard(file: Assembled): Promise<void> {
    if (!file.temporary.startsWith(`${this.#prefix}spans/`)) await this.#delete(file.temporary);
  }

  async sweepTemporary(olderThan: number): Promise<void> {
    await this.#tmp.sweep(olderThan);
    for await (const object of this.#list(`${this.#prefix}tmp/`)) {
      if (object.Key && (object.LastModified?.getTime() ?? 0) < olderThan) await this.#delete(object.Key);
    }
  }

  /**
   * This machine's temporary files only. An assembly's temporary key left by a crash may belong
   * to any machine: the sweep removes it once a day old.
   */
  removeTemporaryOfStopped(startedAt: number): Promise<number> {
    return this.#tmp.removeOfStopped(startedAt);
  }
}

/** The store's "no such key" (404 to HEAD, NoSuchKey to GET). */
function isMissing(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NotFound' || e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404;
}

/** S3's refusals of a completion for the parts it names: those parts, as listed, can never be joined. */
const PARTS_REFUSED = new Set(['InvalidPart', 'InvalidPartOrder', 'EntityTooSmall']);

/**
 * The store refused a completion for the parts it names (`PARTS_REFUSED`). Its other 400s
 * (`ExpiredToken`, `AuthorizationHeaderMalformed`, `RequestTimeout`, …) say nothing of the parts.
 */
function isRefusedAsSent(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.$metadata?.httpStatusCode === 400 && typeof e.name === 'string' && PARTS_REFUSED.has(e.name);
}

/** The store refused the request (a 4xx). */
function isClientError(error: unknown): boolean {
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode ?? 0;
  return status >= 400 && status < 500;
}

const spanGone = () => new AppError('ValidationError', 'A part of this upload is gone: send the file again', { path: 'Upload-Concat' });

/** A conditional write refused because the key exists (412), or is being written (409). */
function isAlreadyThere(error: unknown): boolean {
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  return status === 412 || status === 409;
}
