import type { Hash } from 'node:crypto';
import { PassThrough } from 'node:stream';
import busboy from 'busboy';
import type { Request } from 'express';
import { AppError } from '../../shared/errors.ts';
import type { UploadRequest } from '../attachments/uploads.ts';
import { removeQuietly } from '../attachments/store/disk.ts';
import type { ChunkSlot, FileStore, Received } from '../attachments/store/file-store.ts';

/** At most this many text fields, each at most `MAX_FIELD_BYTES`, besides the one file. */
const MAX_FIELDS = 10;
const MAX_FIELD_BYTES = 1024;
/**
 * What a multipart body may hold besides the file's bytes: the boundaries and part headers of
 * its parts and the fields' values. A body announcing more than the file's limit plus this is
 * refused before a byte of it is read.
 */
export const MULTIPART_OVERHEAD_BYTES = 64 * 1024;
/** How long an upload's body may send nothing at all before it is given up (a stalled or trickling client). */
const UPLOAD_IDLE_MS = 60_000;

/** The length the client announced, or null when it did not (chunked transfer). */
export function announcedLength(req: Request): number | null {
  const header = req.headers['content-length'];
  return header !== undefined && /^\d+$/.test(header) ? Number(header) : null;
}

/**
 * What the headers alone already refuse, checked before the body is read: a body that is not
 * multipart/form-data with a boundary (400), or one announcing more bytes than the largest
 * file allowed (413).
 */
export function checkUploadHeaders(req: Request, ceiling: number): void {
  if (!req.is('multipart/form-data')) throw new AppError('BadRequestError', 'The body must be multipart/form-data');
  if (!/;\s*boundary=/i.test(req.get('content-type') ?? '')) throw new AppError('BadRequestError', 'The multipart body has no boundary');
  const length = announcedLength(req);
  if (length !== null && length > ceiling + MULTIPART_OVERHEAD_BYTES) {
    throw AppError.tooLarge('The request body is larger than the largest upload allowed', { path: 'file' });
  }
}

/**
 * Reads a multipart upload: the text fields, and the one part named `file` streamed straight to
 * a temporary file (never held in memory), cut off past the limit `limitFor` gives from the
 * fields that came before it. Busboy's own limits bound everything else: one file, ten short
 * fields.
 *
 * The first refusal (a malformed part, a field too long or sent twice, a second file, a file
 * under another name, a file too large, a body past the largest file and its overhead however
 * it is sent, a minute with no byte, the client going away) stops the reading at once: the
 * request is unpiped, a file being received is cut off, and every temporary file is removed
 * before the promise rejects. Nothing that arrives after a refusal is ever written to disk. The
 * caller answers at once and closes the connection (`Connection: close`) rather than read the
 * rest of a body it has already refused.
 */
export function readUpload(
  req: Request,
  opts: {
    store: FileStore;
    ceiling: number;
    limitFor(fields: Record<string, string>): Promise<number>;
    /** False for a chunk: its own SHA-1 is never used (the assembled file's is). */
    hash?: boolean;
    /**
     * For a chunk, once the fields are in: the hash of its upload's chunks so far when this one
     * comes next (a copy, its bytes go into it as they arrive), or none.
     */
    continueHash?(fields: Record<string, string>): Hash | undefined;
    /** For a chunk, once the fields are in: its claimed place in its upload's data file, or none (see `FileStore.slotFor`). */
    placeFor?(fields: Record<string, string>): Promise<ChunkSlot | undefined>;
  },
): Promise<UploadRequest> {
  try {
    checkUploadHeaders(req, opts.ceiling);
  } catch (error) {
    return Promise.reject(error);
  }
  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = {};
    let failure: unknown = null;
    let pending: Promise<(Received & { filename: string }) | null> = Promise.resolve(null);
    /** The stream the store is reading, to cut it off on a refusal. */
    let current: PassThrough | null = null;
    let parser: busboy.Busboy;

    /** The first refusal: stop reading, cut off the file being received, and answer once it is gone. */
    const refuse = (error: unknown) => {
      if (failure) return;
      failure = error;
      req.unpipe(parser);
      current?.destroy(error instanceof Error ? error : new Error(String(error)));
      settle();
    };

    try {
      parser = busboy({
        headers: req.headers,
        defParamCharset: 'utf8',
        // One byte above the ceiling: busboy marks a file of exactly `fileSize` bytes truncated.
        limits: { files: 1, fields: MAX_FIELDS, parts: MAX_FIELDS + 1, fieldSize: MAX_FIELD_BYTES, fileSize: opts.ceiling + 1 },
      });
    } catch {
      reject(new AppError('BadRequestError', 'The multipart body has no boundary'));
      return;
    }

    parser.on('field', (name, value, info) => {
      if (failure) return;
      if (info.valueTruncated) refuse(new AppError('ValidationError', `${name}: the value is too long`, { path: name }));
      else if (Object.hasOwn(fields, name)) refuse(new AppError('ValidationError', `${name} was sent twice`, { path: name }));
      else fields[name] = value;
    });
    parser.on('file', (name, stream, info) => {
      // After a refusal nothing more is kept: what busboy still had in hand is thrown away.
      if (failure) {
        stream.resume();
        return;
      }
      if (name !== 'file') {
        stream.resume();
        refuse(new AppError('AdditionalPropertiesError', `The property ${name} must NOT be present`, { path: name }));
        return;
      }
      // The store reads a pass-through, never busboy's own stream: when the store gives up (too
      // large) it destroys what it reads, and a destroyed busboy stream would stall the parser.
      const pass = new PassThrough();
      // Destroyed with an error on a refusal, perhaps before the store reads it or after it has
      // finished: an 'error' with no listener would otherwise bring the whole process down.
      pass.on('error', () => undefined);
      current = pass;
      stream.on('error', (error) => pass.destroy(error));
      stream.on('limit', () => refuse(AppError.tooLarge('The file is larger than allowed', { path: 'file' })));
      stream.pipe(pass);
      pending = (async () => {
        const limit = await opts.limitFor({ ...fields });
        if (failure) throw failure;
        // The fields have named the file's limit: a body announcing more is refused before its bytes are read.
        const length = announcedLength(req);
        if (length !== null && length > limit + MULTIPART_OVERHEAD_BYTES) {
          throw AppError.tooLarge('The request body is larger than the file allowed for this field', { path: 'file' });
        }
        const continueHash = opts.continueHash?.({ ...fields });
        const slot = await opts.placeFor?.({ ...fields });
        const received = await opts.store.receive(pass, limit, { hash: opts.hash ?? true, ...(continueHash ? { continueHash } : {}), ...(slot ? { slot } : {}) });
        if (failure || (stream as { truncated?: boolean }).truncated) {
          await removeQuietly(received.path);
          throw failure ?? AppError.tooLarge('The file is larger than allowed', { path: 'file' });
        }
        return { ...received, filename: info.filename ?? '' };
      })().catch((error: unknown) => {
        refuse(error);
        stream.unpipe(pass);
        stream.resume();
        return null;
      });
    });
    parser.on('filesLimit', () => refuse(new AppError('ValidationError', 'Only one file may be sent', { path: 'file' })));
    parser.on('fieldsLimit', () => refuse(new AppError('ValidationError', 'Too many fields')));
    parser.on('partsLimit', () => refuse(new AppError('ValidationError', 'Too many parts')));
    parser.on('error', (error: unknown) => {
      refuse(new AppError('BadRequestError', `The upload is malformed: ${(error as Error).message}`));
    });
    parser.on('close', () => settle());

    let settled = false;
    function settle() {
      if (settled) return;
      settled = true;
      // Whatever the file part's state, the answer waits until its temporary file is gone or kept.
      void pending.then(async (file) => {
        if (failure) {
          if (file) await removeQuietly(file.path);
          reject(failure);
        } else {
          resolve({ fields, file });
        }
      });
    }
    // The connection closed before the body was read to its end: interrupted, even when every
    // byte had arrived (\`req.complete\`) but was still waiting in the request's buffer (a file
    // part waits for its limit to be known), since a closed request drops what it had buffered
    // and the reading would never finish.
    const interrupted = () => {
      if (req.readableEnded) return;
      refuse(new AppError('BadRequestError', 'The upload was interrupted'));
    };
    req.on('aborted', interrupted);
    req.on('close', interrupted);
    // What the headers could not say of a body sent without a length (chunked): past the largest
    // file and its parts' overhead it is refused, however its bytes are spread (before the first
    // boundary, after the last); and a body that sends nothing for a minute is given up, rather
    // than held for the hour a request may take.
    let bytes = 0;
    const idle = setTimeout(stalled, UPLOAD_IDLE_MS).unref();
    function stalled() {
      // Paused by us (the store or the field's limit still being worked out holds the bytes back):
      // the client is not the one waiting.
      if (req.isPaused()) idle.refresh();
      else refuse(new AppError('RequestTimeoutError', 'The upload sent nothing for a minute'));
    }
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > opts.ceiling + MULTIPART_OVERHEAD_BYTES) refuse(AppError.tooLarge('The request body is larger than the largest upload allowed', { path: 'file' }));
      idle.refresh();
    });
    const done = () => clearTimeout(idle);
    req.on('end', done);
    req.on('close', done);
    parser.on('close', done);
    req.pipe(parser);
  });
}
