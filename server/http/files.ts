import type { Readable } from 'node:stream';
import type { Request, RequestHandler, Response } from 'express';
import mime from 'mime-types';
import {
  AppError,
  AttachmentQuery,
  EditAttachmentQuery,
  EntityAttachmentQuery,
  ChunkStatus,
  parseOrThrow,
  PdfCompareQuery,
  PdfQuery,
  StoredPdfParams,
  UploadResult,
  type NoteEdit,
} from '../../shared/index.ts';
import type { Viewer } from '../accounts/viewer.ts';
import type { StoredFile } from '../attachments/downloads.ts';
import { removeQuietly } from '../attachments/store/disk.ts';
import { sendBody } from '../attachments/store/file-body.ts';
import type { ByteRange, FileStore } from '../attachments/store/file-store.ts';
import type { Config } from '../config.ts';
import type { Services } from '../services.ts';
import { createHttpContext } from './context.ts';
import { checkUploadHeaders, readUpload } from './multipart.ts';
import { sendError } from './send-error.ts';
import { pagePolicy, renderPage, sendHtml } from '../web/render.ts';

/**
 * Answers a refused upload at once: the client gets the answer without sending the rest of a
 * body that would be thrown away (an hour's worth for a slow client, `requestTimeout` in
 * main.ts). `sendError` adds `Connection: close` while the body is unread; once the answer is
 * written, Node closes the socket and what the client still sends is never read.
 */
function refuseUpload(res: Response, error: unknown): void {
  sendError(res, error);
}

/** The headers `sendStored` sets, taken back when an error answers instead. */
const FILE_HEADERS = ['Content-Type', 'Content-Disposition', 'ETag', 'Last-Modified', 'Accept-Ranges', 'Cache-Control', 'Content-Range', 'Content-Length'];

/** Whether `If-Match` (a strong comparison, RFC 9110 13.1.1) or, without it, `If-Unmodified-Since` fails for this file. */
function preconditionFails(req: Request, etag: string, modifiedAt: Date): boolean {
  const ifMatch = req.get('If-Match');
  if (ifMatch !== undefined) return ifMatch.trim() !== '*' && !ifMatch.split(',').some((tag) => tag.trim() === etag);
  const since = Date.parse(req.get('If-Unmodified-Since') ?? '');
  return !Number.isNaN(since) && Math.floor(modifiedAt.getTime() / 1000) * 1000 > since;
}

/** Whether `Range` is to be honoured: always without `If-Range`, else only when it names this very file (its ETag, or a date not before it changed). */
function rangeApplies(req: Request, etag: string, modifiedAt: Date): boolean {
  const ifRange = req.get('If-Range');
  if (ifRange === undefined) return true;
  if (ifRange.includes('"')) return ifRange.trim() === etag;
  const date = Date.parse(ifRange);
  return !Number.isNaN(date) && Math.floor(modifiedAt.getTime() / 1000) * 1000 <= date;
}

/**
 * Streams a stored file, from either store, with its type, length, ETag (the SHA-1), date and a
 * safe name. As Express's `sendFile` does for files on disk (RFC 9110): a failed `If-Match` or
 * `If-Unmodified-Since` is a 412, a matching `If-None-Match` (or `If-Modified-Since`) a 304, one
 * byte range a 206 (several are answered whole; a suffix longer than the file is the whole file,
 * §14.1.3), a range outside the file a 416 with a `Content-Range` naming the file's size (§15.5.17);
 * `HEAD` gets the headers alone.
 */
async function sendStored(req: Request, res: Response, store: FileStore, file: StoredFile): Promise<void> {
  const etag = `"${file.sha1}"`;
  try {
    if (preconditionFails(req, etag, file.modifiedAt)) {
      throw AppError.protocol('BadRequestError', 412, 'The file does not meet the request’s If-Match or If-Unmodified-Since condition');
    }
    res.set({
      'Content-Type': mime.lookup(file.extension) || 'application/octet-stream',
      'Content-Disposition': `${file.extension === 'pdf' ? 'inline' : 'attachment'}; filename="${file.filename}"`,
      ETag: etag,
      'Last-Modified': file.modifiedAt.toUTCString(),
      'Accept-Ranges': 'bytes',
      'Cache-Control': 'private, no-cache',
    });
    // Express compares the request's If-None-Match and If-Modified-Since with the ETag and date just set.
    if (req.fresh) {
      for (const header of ['Content-Type', 'Content-Disposition']) res.removeHeader(header);
      res.status(304).end();
      return;
    }
    let range: ByteRange | undefined;
    if (req.get('Range') !== undefined && rangeApplies(req, etag, file.modifiedAt)) {
      // A suffix longer than the file is all of it, where range-parser reads no range at all.
      const suffix = /^bytes=\s*-(\d+)\s*$/.exec(req.get('Range') ?? '');
      if (suffix && file.size > 0 && Number(suffix[1]) >= file.size) {
        range = { start: 0, end: file.size - 1 };
      } else {
        const ranges = req.range(file.size, { combine: true });
        if (ranges === -1) throw new AppError('RangeNotSatisfiableError', 'The requested range is outside the file');
        if (ranges !== undefined && ranges !== -2 && ranges.type === 'bytes' && ranges.length === 1) range = ranges[0];
      }
    }
    // Opened before the status is written: a file gone meanwhile is still a 404 Error body.
    const body = req.method === 'HEAD' ? null : await store.read(file.url, range);
    res.status(range ? 206 : 200);
    if (range) res.set('Content-Range', `bytes ${range.start}-${range.end}/${file.size}`);
    res.set('Content-Length', String(range ? range.end - range.start + 1 : file.size));
    if (!body) {
      res.end();
      return;
    }
    // A store failing half-way (or the client leaving) cuts the body short: the connection closes with it.
    await sendBody(body, res).catch(() => undefined);
  } catch (error) {
    if (res.headersSent) throw error;
    for (const header of FILE_HEADERS) res.removeHeader(header);
    if (error instanceof AppError && error.status === 416) res.setHeader('Content-Range', `bytes */${file.size}`);
    throw error;
  }
}

/** Several stored files as one zip, each named after its note; each is read from the store only when the zip gets to it. */
async function sendZip(res: Response, store: FileStore, files: StoredFile[], name: string): Promise<void> {
  // Loaded at the first zip asked for: most processes never make one.
  const { default: yazl } = await import('yazl');
  const zip = new yazl.ZipFile();
  // A file that cannot be read once the zip is under way (gone, or the store failing) cuts the
  // answer short: never a 500 after a 200. yazl reports it on the zip itself, where an error
  // without a listener would stop the process.
  zip.on('error', () => res.destroy());
  const reading = new Set<Readable>();
  files.forEach((file, i) =>
    zip.addReadStreamLazy(`${i + 1}-${file.filename}`, { size: file.size, mtime: file.modifiedAt }, (done) => {
      store.read(file.url).then(
        (stream) => {
          reading.add(stream);
          stream.on('close', () => reading.delete(stream));
          stream.on('error', (error) => zip.emit('error', error));
          done(null, stream);
        },
        (error: unknown) => zip.emit('error', error),
      );
    }),
  );
  zip.end();
  res.setHeader('Content-Type', 'application/zip');
  res.setHeader('Content-Disposition', `attachment; filename="${name}"`);
  // The client leaving, or a failure, stops the reading: no file of the store is left open.
  res.on('close', () => {
    for (const stream of reading) stream.destroy();
  });
  zip.outputStream.pipe(res);
}

/** The page that shows two revisions of a note's PDF side by side (`templates/compare.eta`), framing our own files only. */
function sendComparePage(res: Response, left: NoteEdit, right: NoteEdit, field: string): void {
  const column = (edit: NoteEdit, side: string) => ({
    side,
    url: String((edit.content[field] as { value?: unknown }).value),
    date: new Date(edit.tcdate).toISOString().replace('T', ' ').slice(0, 16),
  });
  const html = renderPage('compare', { title: 'Compare revisions', columns: [column(left, 'Left'), column(right, 'Right')] });
  sendHtml(res, 200, html, pagePolicy({ frames: true }));
}

/**
 * The handlers of the `stream` routes: uploads (multipart, whole or in chunks) and file
 * downloads. They call the same uploads and downloads services the procedures use; only the
 * transport differs. The route table (`routes.ts`) names them.
 */
export function fileHandlers(services: Services, config: Config) {
  const { uploads, chunkedUploads: chunks, downloads } = services;
  const store = downloads.store;

  const upload = (kind: 'whole' | 'chunk') => async (req: Request, res: Response) => {
    const ctx = createHttpContext(req, res, services, config);
    const ceiling = kind === 'chunk' ? config.maxChunkBytes : uploads.maxUploadBytes;
    let viewer;
    // Everything the headers decide is decided before a byte of the body is read: the session
    // (401), the upload allowance (429, 503), the content type (400) and the announced length (413).
    // A chunk's human verification waits for the fields that name its upload: a chunk of an
    // upload already begun was checked with its first (`begun`).
    let humanCheck = false;
    // An upload counts against the hour's allowance from its admission until it is recorded or refused (`beginUpload`).
    let endBeginning = () => undefined as void;
    const humanToken = req.get('cf-turnstile-token');
    const checkHuman = async (signedIn: Viewer, fields: Record<string, string>) => {
      if (!humanCheck) return;
      humanCheck = false;
      if (!(await chunks.begun(signedIn, fields, uploadRows))) endBeginning = await uploads.beginUpload(signedIn, humanToken, ctx.origin.address);
    };
    try {
      viewer = await ctx.viewer();
      if (kind === 'chunk') humanCheck = uploads.admitUploader(viewer).counted;
      else endBeginning = await uploads.allowUpload(viewer, humanToken, ctx.origin.address);
      checkUploadHeaders(req, ceiling);
    } catch (error) {
      endBeginning();
      refuseUpload(res, error);
      return;
    }
    // A chunk counts as under way from when its fields are in (see `announceChunk`), until
    // `saveChunk` takes it over.
    let announced: string | undefined;
    const invitations = uploads.invitationsOnce();
    const uploadRows = chunks.uploadsOnce();
    try {
      const parsed = await readUpload(req, {
        store: uploads.store,
        ceiling,
        hash: kind !== 'chunk',
        limitFor: async (fields) => {
          // A file sent before the fields that name its upload is checked once they are all in (below).
          if (fields.clientUploadId !== undefined) await checkHuman(viewer, fields);
          if (kind === 'chunk' && announced === undefined) announced = await chunks.announceChunk(viewer, fields);
          return uploads.limitFor(kind, fields, invitations);
        },
        ...(kind === 'chunk'
          ? {
              continueHash: (fields: Record<string, string>) => chunks.continueHash(viewer, fields),
              placeFor: (fields: Record<string, string>) => chunks.placeChunk(viewer, fields, { invitations, uploads: uploadRows }),
            }
          : {}),
      });
      // A body whose file came before the fields naming its upload (or that had no file) is
      // checked now, and what it sent is let go if it is refused.
      await checkHuman(viewer, parsed.fields).catch(async (error: unknown) => {
        if (parsed.file) await removeQuietly(parsed.file.path);
        throw error;
      });
      const handedOver = announced;
      announced = undefined;
      // Checked against the same schemas the spec's answers are defined by, as procedures' outputs are.
      const answer = kind === 'chunk' ? await chunks.saveChunk(viewer, parsed, { announced: handedOver, invitations, uploads: uploadRows }) : await uploads.saveUpload(viewer, parsed, invitations);
      res.json('url' in answer && typeof answer.url === 'string' ? UploadResult.parse(answer) : ChunkStatus.parse(answer));
    } catch (error) {
      refuseUpload(res, error);
    } finally {
      endBeginning();
      if (announced !== undefined) await chunks.withdrawChunk(announced);
    }
  };

  const download = (read: (req: Request, reader: Awaited<ReturnType<ReturnType<typeof createHttpContext>['optionalViewer']>>) => Promise<void>) =>
    async (req: Request, res: Response) => {
      try {
        await read(req, await createHttpContext(req, res, services, config).optionalViewer());
      } catch (error) {
        sendError(res, error, req.query);
      }
    };

  const attachment = download(async (req, reader) => {
    const query = parseOrThrow(AttachmentQuery, req.query);
    const res = req.res as Response;
    if (query.id) return sendStored(req, res, store, await downloads.fileOfNote(query.id, query.name, reader));
    await sendZip(res, store, await downloads.filesOfNotes(query.ids ?? [], query.name, reader), `${query.name}.zip`);
  });
  const pdf = download(async (req, reader) => {
    const query = parseOrThrow(PdfQuery, req.query);
    const res = req.res as Response;
    if (query.id) return sendStored(req, res, store, await downloads.fileOfNote(query.id, 'pdf', reader));
    await sendZip(res, store, await downloads.filesOfNotes(query.ids ?? [], 'pdf', reader), 'pdfs.zip');
  });
  const editAttachment = download(async (req, reader) => {
    const query = parseOrThrow(EditAttachmentQuery, req.query);
    await sendStored(req, req.res as Response, store, await downloads.fileOfEdit(query.id, query.name, reader));
  });
  const entityAttachment = (kind: 'group' | 'invitation') =>
    download(async (req, reader) => {
      const query = parseOrThrow(EntityAttachmentQuery, req.query);
      await sendStored(req, req.res as Response, store, await downloads.fileOfEntity(kind, query.id, query.name, reader));
    });
  const compareView = download(async (req, reader) => {
    const query = parseOrThrow(PdfCompareQuery, req.query);
    const { leftNote, rightNote } = await downloads.compare(query, reader);
    sendComparePage(req.res as Response, leftNote, rightNote, query.field);
  });
  const pdfById = download(async (req, reader) => {
    await sendStored(req, req.res as Response, store, await downloads.pdfById(parseOrThrow(StoredPdfParams, { ...req.params }).id, reader));
  });

  return {
    upload: upload('whole'),
    uploadChunk: upload('chunk'),
    attachment,
    pdf,
    editAttachment,
    groupAttachment: entityAttachment('group'),
    invitationAttachment: entityAttachment('invitation'),
    compareView,
    pdfById,
  } satisfies Record<string, RequestHandler>;
}

export type FileHandlers = ReturnType<typeof fileHandlers>;
