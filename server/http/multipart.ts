import { PassThrough } from 'node:stream';
import busboy from 'busboy';
import type { Request } from 'express';
import { AppError } from '../../shared/errors.ts';
import type { UploadRequest } from '../attachments/service.ts';
import { removeQuietly, type FileStore, type Received } from '../attachments/storage.ts';

/**
 * Reads a multipart upload: the text fields, and the one part named `file` streamed straight to
 * a temporary file (never held in memory), cut off past the limit `limitFor` gives from the
 * fields that came before it. Busboy's own limits bound everything else: one file, ten short
 * fields. The whole body is always read before the answer, so a refused upload never hangs the
 * client; a refused file is never kept, not even as a temporary file.
 */
export function readUpload(
  req: Request,
  opts: {
    store: FileStore;
    ceiling: number;
    limitFor(fields: Record<string, string>): Promise<number>;
    /** False for a chunk: its own SHA-1 is never used (the assembled file's is). */
    hash?: boolean;
  },
): Promise<UploadRequest> {
  if (!req.is('multipart/form-data')) {
    return Promise.reject(new AppError('BadRequestError', 'The body must be multipart/form-data'));
  }
  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = {};
    let failure: unknown = null;
    let pending: Promise<(Received & { filename: string }) | null> = Promise.resolve(null);
    /** The stream the store is reading, to end it if the client goes away. */
    let current: PassThrough | null = null;
    const fail = (error: unknown) => {
      failure ??= error;
    };

    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        defParamCharset: 'utf8',
        // One byte above the ceiling: busboy marks a file of exactly `fileSize` bytes truncated.
        limits: { files: 1, fields: 10, parts: 11, fieldSize: 1024, fileSize: opts.ceiling + 1 },
      });
    } catch {
      reject(new AppError('BadRequestError', 'The multipart body has no boundary'));
      return;
    }

    parser.on('field', (name, value, info) => {
      if (info.valueTruncated) fail(new AppError('ValidationError', `${name}: the value is too long`, { path: name }));
      else if (name in fields) fail(new AppError('ValidationError', `${name} was sent twice`, { path: name }));
      else fields[name] = value;
    });
    parser.on('file', (name, stream, info) => {
      if (name !== 'file') {
        fail(new AppError('AdditionalPropertiesError', `The property ${name} must NOT be present`, { path: name }));
        stream.resume();
        return;
      }
      // The store reads a pass-through, never busboy's own stream: when the store gives up (too
      // large) it destroys what it reads, and a destroyed busboy stream would stall the parser
      // and leave the client hanging. Busboy's stream is unpiped and drained instead.
      const pass = new PassThrough();
      // Destroyed with an error when the client goes away, perhaps before the store reads it or
      // after it has finished: the failure is reported through `fail`, and an 'error' with no
      // listener would otherwise bring the whole process down.
      pass.on('error', () => undefined);
      current = pass;
      stream.on('error', (error) => pass.destroy(error));
      stream.pipe(pass);
      pending = (async () => {
        const limit = await opts.limitFor({ ...fields });
        const received = await opts.store.receive(pass, limit, { hash: opts.hash ?? true });
        if ((stream as { truncated?: boolean }).truncated) {
          await removeQuietly(received.path);
          throw AppError.tooLarge('The file is larger than allowed', { path: 'file' });
        }
        return { ...received, filename: info.filename ?? '' };
      })().catch((error: unknown) => {
        fail(error);
        // Keep reading, and throwing away, what the client still sends.
        stream.unpipe(pass);
        stream.resume();
        return null;
      });
    });
    parser.on('filesLimit', () => fail(new AppError('ValidationError', 'Only one file may be sent', { path: 'file' })));
    parser.on('fieldsLimit', () => fail(new AppError('ValidationError', 'Too many fields')));
    parser.on('partsLimit', () => fail(new AppError('ValidationError', 'Too many parts')));
    parser.on('error', (error: unknown) => {
      fail(new AppError('BadRequestError', `The upload was interrupted or malformed: ${(error as Error).message}`));
      settle();
    });
    parser.on('close', () => settle());

    let settled = false;
    function settle() {
      if (settled) return;
      settled = true;
      void pending.then(async (file) => {
        if (failure) {
          if (file) await removeQuietly(file.path);
          reject(failure);
        } else {
          resolve({ fields, file });
        }
      });
    }
    const interrupted = () => {
      if (req.complete) return;
      const error = new AppError('BadRequestError', 'The upload was interrupted');
      fail(error);
      current?.destroy(error);
      parser.destroy();
    };
    req.on('aborted', interrupted);
    req.on('close', interrupted);
    req.pipe(parser);
  });
}
