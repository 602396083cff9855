import type { Request, RequestHandler, Response } from 'express';
import mime from 'mime-types';
import yazl from 'yazl';
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
import type { StoredFile } from '../attachments/service.ts';
import type { Config } from '../config.ts';
import type { Services } from '../services.ts';
import { createHttpContext } from './context.ts';
import { checkUploadHeaders, readUpload } from './multipart.ts';
import { sendError } from './send-error.ts';

/**
 * Answers a refused upload at once: the client gets the answer without sending the rest of a
 * body that would be thrown away (an hour's worth for a slow client, `requestTimeout` in
 * main.ts). `sendError` adds `Connection: close` while the body is unread; once the answer is
 * written, Node closes the socket and what the client still sends is never read.
 */
function refuseUpload(res: Response, error: unknown): void {
  sendError(res, error);
}

/** Streams a stored file with its type, length, ETag (the SHA-1) and a safe name; ranges are served. */
function sendStored(res: Response, file: StoredFile): void {
  const type = mime.lookup(file.extension) || 'application/octet-stream';
  const disposition = file.extension === 'pdf' ? 'inline' : 'attachment';
  res.sendFile(
    file.path,
    {
      etag: false,
      dotfiles: 'deny',
      headers: {
        'Content-Type': type,
        ETag: `"${file.sha1}"`,
        'Content-Disposition': `${disposition}; filename="${file.filename}"`,
        'Cache-Control': 'private, no-cache',
      },
    },
    (error) => {
      if (!error || res.headersSent) return;
      for (const header of ['Content-Type', 'Content-Disposition', 'ETag', 'Content-Range']) res.removeHeader(header);
      const status = (error as { status?: number }).status;
      if (status === 416) sendError(res, new AppError('RangeNotSatisfiableError', 'The requested range is outside the file'));
      // `If-Match` or `If-Unmodified-Since` that the file does not meet: the client's condition, not our failure.
      else if (status === 412) sendError(res, new AppError('BadRequestError', 'The file does not meet the request’s If-Match or If-Unmodified-Since condition'));
      else if (status === 404) sendError(res, new AppError('NotFoundError', `File Not Found: ${file.url}`));
      else sendError(res, error);
    },
  );
}

/** Several stored files as one zip, each named after its note. */
function sendZip(res: Response, files: StoredFile[], name: string): void {
  const zip = new yazl.ZipFile();
  files.forEach((file, i) => zip.addFile(file.path, `${i + 1}-${file.filename}`));
  zip.end();
  res.setHeader('Content-Type', 'application/zip');
  res.setHeader('Content-Disposition', `attachment; filename="${name}"`);
  zip.outputStream.pipe(res);
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

/** The page that shows two revisions of a note's PDF side by side. */
function comparePage(left: NoteEdit, right: NoteEdit, field: string): string {
  const column = (edit: NoteEdit, side: string) => {
    const url = String((edit.content[field] as { value?: unknown }).value);
    const date = new Date(edit.tcdate).toISOString().replace('T', ' ').slice(0, 16);
    return `<section aria-label="${side} revision"><h2>${side}: revision of ${escapeHtml(date)} UTC</h2>
<iframe title="${side} revision" src="${escapeHtml(url)}"></iframe></section>`;
  };
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Compare revisions</title>
<style>body{margin:0;font-family:system-ui,sans-serif}main{display:grid;grid-template-columns:1fr 1fr;gap:8px;height:100vh}
section{display:flex;flex-direction:column}h2{font-size:14px;margin:8px}iframe{flex:1;border:1px solid #ccc;width:100%}</style>
</head><body><main>${column(left, 'Left')}${column(right, 'Right')}</main></body></html>`;
}

/**
 * The handlers of the `stream` routes: uploads (multipart, whole or in chunks) and file
 * downloads. They call the same attachments service the procedures use; only the transport
 * differs. The route table (`routes.ts`) names them.
 */
export function fileHandlers(services: Services, config: Config) {
  const attachments = services.attachments;

  const upload = (kind: 'whole' | 'chunk') => async (req: Request, res: Response) => {
    const ctx = createHttpContext(req, res, services, config);
    const ceiling = kind === 'chunk' ? config.maxChunkBytes : config.maxUploadBytes;
    let viewer;
    // Everything the headers decide is decided before a byte of the body is read: the session
    // (401), the upload allowance (429, 503), the content type (400) and the announced length (413).
    try {
      viewer = await ctx.viewer();
      await attachments.allowUpload(viewer, req.get('cf-turnstile-token'), ctx.origin.address);
      checkUploadHeaders(req, ceiling);
    } catch (error) {
      refuseUpload(res, error);
      return;
    }
    try {
      const parsed = await readUpload(req, {
        store: attachments.store,
        ceiling,
        hash: kind !== 'chunk',
        limitFor: (fields) => attachments.limitFor(kind, fields),
      });
      // Checked against the same schemas the spec's answers are defined by, as procedures' outputs are.
      const answer = kind === 'chunk' ? await attachments.saveChunk(viewer, parsed) : await attachments.saveUpload(viewer, parsed);
      res.json('url' in answer && typeof answer.url === 'string' ? UploadResult.parse(answer) : ChunkStatus.parse(answer));
    } catch (error) {
      refuseUpload(res, error);
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
    if (query.id) return sendStored(res, await attachments.fileOfNote(query.id, query.name, reader));
    sendZip(res, await Promise.all((query.ids ?? []).map((id) => attachments.fileOfNote(id, query.name, reader))), `${query.name}.zip`);
  });
  const pdf = download(async (req, reader) => {
    const query = parseOrThrow(PdfQuery, req.query);
    const res = req.res as Response;
    if (query.id) return sendStored(res, await attachments.fileOfNote(query.id, 'pdf', reader));
    sendZip(res, await Promise.all((query.ids ?? []).map((id) => attachments.fileOfNote(id, 'pdf', reader))), 'pdfs.zip');
  });
  const editAttachment = download(async (req, reader) => {
    const query = parseOrThrow(EditAttachmentQuery, req.query);
    sendStored(req.res as Response, await attachments.fileOfEdit(query.id, query.name, reader));
  });
  const entityAttachment = (kind: 'group' | 'invitation') =>
    download(async (req, reader) => {
      const query = parseOrThrow(EntityAttachmentQuery, req.query);
      sendStored(req.res as Response, await attachments.fileOfEntity(kind, query.id, query.name, reader));
    });
  const compareView = download(async (req, reader) => {
    const query = parseOrThrow(PdfCompareQuery, req.query);
    const { leftNote, rightNote } = await attachments.compare(query, reader);
    (req.res as Response).type('html').send(comparePage(leftNote, rightNote, query.field));
  });
  const pdfById = download(async (req, reader) => {
    sendStored(req.res as Response, await attachments.pdfById(parseOrThrow(StoredPdfParams, { ...req.params }).id, reader));
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
