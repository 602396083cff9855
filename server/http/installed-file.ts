import { statSync } from 'node:fs';
import type { RequestHandler } from 'express';
import { AppError } from '../../shared/errors.ts';
import { installedFileEtag } from '../etag.ts';

/** The headers `res.sendFile` sets for the file (and `send` before it refuses), taken back when an error answers instead. */
const FILE_HEADERS = ['Content-Type', 'ETag', 'Last-Modified', 'Accept-Ranges', 'Cache-Control', 'Content-Range', 'Content-Length'];

/**
 * The handler of a file of an installed package (Swagger UI's, the passkeys' browser bundle),
 * sent with `res.sendFile` and kept a day by caches (`send`: its ETag from `installedFileEtag`,
 * its date, ranges and conditions), as `contentType` when given. A condition the file fails
 * (`If-Match`, `If-Unmodified-Since`) is a 412, a range outside it (or none at all: `bytes=5-1`,
 * `bytes=-0`) a 416 whose `Content-Range` gives the file's size (RFC 9110 §15.5.17), each in the
 * Error body. `send` has set the file's headers by then: they are taken back and the error is
 * `no-store`, or a shared cache would keep it, as the file, for the day (and `sendError` alone
 * made both a 400).
 */
export function installedFile(file: string, contentType?: string): RequestHandler {
  const etag = installedFileEtag(file);
  // Read at the first range refused: the installed file does not change while the process runs.
  let size: number | undefined;
  return (_req, res, next) => {
    res.setHeader('ETag', etag());
    res.sendFile(file, { maxAge: '1d', ...(contentType ? { headers: { 'Content-Type': contentType } } : {}) }, (error?: Error & { status?: unknown; code?: unknown }) => {
      // The client left, or the file is under way: nothing more can be answered (Express's own rule).
      if (!error || error.code === 'ECONNABORTED' || res.headersSent) return;
      for (const header of FILE_HEADERS) res.removeHeader(header);
      res.setHeader('Cache-Control', 'no-store');
      if (error.status === 416) {
        size ??= statSync(file).size;
        res.setHeader('Content-Range', `bytes */${size}`);
        next(new AppError('RangeNotSatisfiableError', 'The requested range is outside the file'));
      } else if (error.status === 412) {
        next(AppError.protocol('BadRequestError', 412, 'The file does not meet the request’s If-Match or If-Unmodified-Since condition'));
      } else {
        next(error);
      }
    });
  };
}
