/**
 * tus 1.0.0 on the wire (https://tus.io/protocols/resumable-upload): `OPTIONS|POST
 * /attachment/tus`, `HEAD|PATCH|DELETE /attachment/tus/{id}`, with the extensions creation,
 * creation-with-upload, creation-defer-length, termination, expiration, checksum and
 * concatenation. The headers are read and checked here; every rule is `TusService`'s
 * (`attachments/tus.ts`), which runs the checks of `PUT /attachment` before a byte is read.
 * Refusals are the spec's Error body, with tus's statuses where tus has its own (409, 412, 415,
 * 423, 460), and every answer carries `Tus-Resumable`.
 */
import type { Request, RequestHandler, Response } from 'express';
import { AppError } from '../../shared/index.ts';
import type { TusConcat, TusCreation, TusFields, TusState, TusWrite } from '../attachments/tus-requests.ts';
import type { Config } from '../config.ts';
import type { Services } from '../services.ts';
import { allowAnyOrigin } from './cors.ts';
import { createHttpContext } from './context.ts';
import { sendError, sendsBody } from './send-error.ts';

const VERSION = '1.0.0';
const EXTENSIONS = 'creation,creation-with-upload,creation-defer-length,termination,expiration,checksum,concatenation';
const CHECKSUMS = { sha1: 20, sha256: 32, md5: 16 } as const;
const OCTETS = 'application/offset+octet-stream';

/**
 * Whether the request says its body is tus's (`Content-Type`, its parameters aside, in any
 * letter case), body or none: Express's `req.is` reads no type on a request without one, and a
 * PATCH that sends nothing with the right type is answered its offset (204), as @tus/server does.
 */
const saysOctets = (req: Request): boolean => (req.get('content-type') ?? '').split(';', 1)[0]?.trim().toLowerCase() === OCTETS;
/** What a page on another origin may read of an answer (CORS): tus's headers and ours. */
const EXPOSED = 'Location, Upload-Offset, Upload-Length, Upload-Defer-Length, Upload-Metadata, Upload-Expires, Upload-Concat, Tus-Resumable, Tus-Version, Tus-Extension, Tus-Max-Size, Tus-Checksum-Algorithm, Attachment-Url, X-Request-Id';
const ALLOWED = 'Authorization, Content-Type, Tus-Resumable, Upload-Length, Upload-Defer-Length, Upload-Metadata, Upload-Offset, Upload-Concat, Upload-Checksum, cf-turnstile-token, X-Requested-With, X-Request-Id';

/** Headers every tus answer has, the refusals' included. */
function commonHeaders(res: Response): void {
  res.setHeader('Tus-Resumable', VERSION);
  allowAnyOrigin(res);
  res.setHeader('Access-Control-Expose-Headers', EXPOSED);
  res.setHeader('Cache-Control', 'no-store');
}

/**
 * A check that runs before a tus route's handler (the same-origin rule of its `octets` body),
 * with tus's headers already set, so that its refusal is a tus answer too.
 */
export function asTusAnswer(check: RequestHandler): RequestHandler {
  return (req, res, next) => {
    commonHeaders(res);
    return check(req, res, next);
  };
}

/**
 * A whole number of bytes as tus writes one: decimal digits, no sign. One past what a number
 * holds exactly (16 digits or more, leading zeros aside) reads as Infinity: a length that large is
 * over the limit (413), an offset that large is not the upload's (409), as any other would be.
 */
function bytesHeader(req: Request, name: string): number | undefined {
  const text = req.get(name)?.trim();
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text)) throw new AppError('BadRequestError', `${name} must be a whole number of bytes`, { path: name });
  const digits = text.replace(/^0+(?=\d)/, '');
  return digits.length > 15 ? Number.POSITIVE_INFINITY : Number(digits);
}

/**
 * `Upload-Metadata`: comma-separated `key base64value` pairs; the keys this service reads. A value
 * is standard base64 with its padding (RFC 4648 section 4), as tus asks: unpadded, it is refused,
 * as `@tus/server` refuses it (tusd drops such a pair). Spaces around a comma and an empty pair
 * are let pass, as tusd lets them (`@tus/server` refuses them): HTTP's list syntax allows them.
 */
export function parseMetadata(header: string | undefined): { fields: TusFields; raw: string } {
  const raw = header ?? '';
  const values = new Map<string, string>();
  for (const pair of raw.split(',').map((p) => p.trim()).filter(Boolean)) {
    const [key, value, ...rest] = pair.split(' ');
    if (!key || rest.length > 0 || !/^[\x21-\x2b\x2d-\x7e]+$/.test(key) || (value !== undefined && (value.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(value)))) {
      throw new AppError('BadRequestError', 'Upload-Metadata must be comma-separated "key base64value" pairs', { path: 'Upload-Metadata' });
    }
    if (values.has(key)) throw new AppError('BadRequestError', `Upload-Metadata names ${key} twice`, { path: 'Upload-Metadata' });
    values.set(key, Buffer.from(value ?? '', 'base64').toString('utf8'));
  }
  const invitationId = values.get('invitation') ?? values.get('invitationId');
  // `field` for clients whose own metadata uses `name` for the file's name (Uppy).
  const name = values.get('field') ?? values.get('name');
  const filename = values.get('filename');
  const missing = [!invitationId && 'invitation', !name && 'name', !filename && 'filename'].filter(Boolean);
  if (missing.length > 0) throw new AppError('MissingRequiredError', `Upload-Metadata must give ${missing.join(', ')}`, { path: 'Upload-Metadata' });
  return { fields: { invitationId: invitationId as string, name: name as string, filename: filename as string }, raw };
}

/** `Upload-Concat`: `partial`, or `final;` and the partial uploads' URLs (absolute or this service's paths). */
function parseConcat(header: string | undefined): TusConcat {
  if (header === undefined) return null;
  if (header.trim() === 'partial') return { kind: 'partial' };
  const final = /^final;(.*)$/.exec(header.trim());
  if (!final) throw new AppError('BadRequestError', 'Upload-Concat must be "partial" or "final;" and the partial uploads\' URLs', { path: 'Upload-Concat' });
  const ids = (final[1] ?? '').trim().split(/\s+/).filter(Boolean).map((url) => /\/attachment\/tus\/([0-9a-f-]{36})\/?$/.exec(url)?.[1] ?? '');
  if (ids.length === 0 || ids.some((id) => !id)) throw new AppError('BadRequestError', 'Upload-Concat: final; names an upload that is not one of this service\'s', { path: 'Upload-Concat' });
  return { kind: 'final', ids, header: header.trim() };
}

/** `Upload-Checksum: <algorithm> <base64 digest>`. */
function parseChecksum(header: string | undefined): TusWrite['checksum'] {
  if (header === undefined) return undefined;
  const [algorithm, digest, ...rest] = header.trim().split(' ');
  if (!algorithm || !(algorithm in CHECKSUMS)) {
    throw new AppError('BadRequestError', `Upload-Checksum: the algorithm must be one of ${Object.keys(CHECKSUMS).join(', ')}`, { path: 'Upload-Checksum' });
  }
  const bytes = Buffer.from(digest ?? '', 'base64');
  if (rest.length > 0 || bytes.length !== CHECKSUMS[algorithm as keyof typeof CHECKSUMS]) {
    throw new AppError('BadRequestError', 'Upload-Checksum must be "<algorithm> <base64 digest>"', { path: 'Upload-Checksum' });
  }
  return { algorithm: algorithm as keyof typeof CHECKSUMS, digest: bytes };
}

export function tusHandlers(services: Services, config: Config) {
  const tus = services.tus;
  // The largest upload: `MAX_UPLOAD_MB`, or less where the store keeps no larger file (S3).
  const maxSize = services.uploads.maxUploadBytes;
  const location = (id: string) => `${config.baseUrl}/attachment/tus/${id}`;

  const common = commonHeaders;

  const describe = (res: Response, state: TusState) => {
    res.setHeader('Upload-Offset', String(state.offset));
    if (state.length === null) res.setHeader('Upload-Defer-Length', '1');
    else res.setHeader('Upload-Length', String(state.length));
    // tus: the time after which the *unfinished* upload expires; a finished one has no such time to tell.
    if (state.url === null) res.setHeader('Upload-Expires', new Date(state.expiresAt).toUTCString());
    if (state.concat) res.setHeader('Upload-Concat', state.concat);
    if (state.url) res.setHeader('Attachment-Url', state.url);
  };

  /** Runs a tus request: the version, the session, then `work`; a refusal is the Error body. */
  const handle = (work: (req: Request, res: Response, ctx: ReturnType<typeof createHttpContext>) => Promise<void>): RequestHandler =>
    async (req, res) => {
      common(res);
      try {
        if (req.get('tus-resumable') !== VERSION) {
          res.setHeader('Tus-Version', VERSION);
          throw AppError.protocol('BadRequestError', 412, `This server speaks tus ${VERSION}: send Tus-Resumable: ${VERSION}`, { path: 'Tus-Resumable' });
        }
        await work(req, res, createHttpContext(req, res, services, config));
      } catch (error) {
        sendError(res, error);
      }
    };

  const options: RequestHandler = (_req, res) => {
    common(res);
    res.setHeader('Tus-Version', VERSION);
    res.setHeader('Tus-Extension', EXTENSIONS);
    res.setHeader('Tus-Max-Size', String(maxSize));
    res.setHeader('Tus-Checksum-Algorithm', Object.keys(CHECKSUMS).join(','));
    res.setHeader('Access-Control-Allow-Methods', 'POST, HEAD, PATCH, DELETE, OPTIONS');
    res.setHeader('Access-Control-Allow-Headers', ALLOWED);
    res.setHeader('Access-Control-Max-Age', '86400');
    res.status(204).end();
  };

  /** A creation's headers checked and its upload created: who asked, the upload, and whether a body (and its checksum) follows. */
  const createUpload = async (req: Request, ctx: ReturnType<typeof createHttpContext>) => {
    const viewer = await ctx.viewer();
    const concat = parseConcat(req.get('upload-concat'));
    const length = bytesHeader(req, 'Upload-Length');
    const deferred = req.get('upload-defer-length');
    if (deferred !== undefined && deferred !== '1') throw new AppError('BadRequestError', 'Upload-Defer-Length may only be 1', { path: 'Upload-Defer-Length' });
    if (concat?.kind !== 'final' && (length === undefined) === (deferred === undefined)) {
      throw new AppError('BadRequestError', 'Send Upload-Length, or Upload-Defer-Length: 1', { path: 'Upload-Length' });
    }
    if (length !== undefined && length > maxSize) throw AppError.tooLarge(`A file may be at most ${maxSize} bytes (Tus-Max-Size)`, { path: 'Upload-Length' });
    const body = sendsBody(req) !== false;
    if (body && !saysOctets(req)) throw AppError.protocol('BadRequestError', 415, `A creation's body must be ${OCTETS}`, { path: 'Content-Type' });
    if (concat?.kind === 'final' && body) throw new AppError('BadRequestError', 'A final upload has no body of its own', { path: 'Upload-Concat' });
    const { fields, raw } = parseMetadata(req.get('upload-metadata'));
    const creation: TusCreation = { length: concat?.kind === 'final' ? null : (length ?? null), metadata: raw, fields, concat };
    const checksum = parseChecksum(req.get('upload-checksum'));
    const state = await tus.create(viewer, creation, req.get('cf-turnstile-token'), ctx.origin.address);
    return { viewer, state, body, checksum };
  };

  const create = handle(async (req, res, ctx) => {
    // The parts of a parallel upload are placed in the order their creations arrive: the place
    // in line is taken before anything is awaited (see `TusSpans.line`).
    const turn = tus.creationTurn(req.get('upload-concat'), req.get('upload-metadata'), ctx.credentials.accessToken);
    let created: Awaited<ReturnType<typeof createUpload>>;
    try {
      created = await (turn ? turn.run(() => createUpload(req, ctx)) : createUpload(req, ctx));
    } finally {
      turn?.leave();
    }
    const { viewer, body, checksum } = created;
    let { state } = created;
    if (body) {
      // A creation whose bytes are refused (too many, a checksum that does not match) leaves
      // nothing behind: its client never learnt the upload's URL, and starts a new one.
      const id = state.id;
      state = await tus.write(viewer, id, { offset: 0, body: req, sendsBytes: sendsBody(req), ...(checksum ? { checksum } : {}) }).catch(async (error: unknown) => {
        await tus.terminate(viewer, id).catch(() => undefined);
        throw error;
      });
      // Cut mid-body: a PATCH keeps what arrived for its client to resume, but this client never
      // learns the upload's URL, so nothing could resume it. It goes at once, rather than
      // holding its bytes and a place among the person's unfinished uploads until it expires.
      if (req.readableAborted) {
        await tus.terminate(viewer, id).catch(() => undefined);
        return;
      }
    }
    res.setHeader('Location', location(state.id));
    describe(res, state);
    res.status(201).end();
  });

  const head = handle(async (req, res, ctx) => {
    const state = await tus.head(await ctx.viewer(), String(req.params.id));
    describe(res, state);
    if (state.metadata) res.setHeader('Upload-Metadata', state.metadata);
    res.status(200).end();
  });

  const patch = handle(async (req, res, ctx) => {
    const viewer = await ctx.viewer();
    if (!saysOctets(req)) throw AppError.protocol('BadRequestError', 415, `A PATCH's body must be ${OCTETS}`, { path: 'Content-Type' });
    const offset = bytesHeader(req, 'Upload-Offset');
    if (offset === undefined) throw new AppError('MissingRequiredError', 'Send Upload-Offset', { path: 'Upload-Offset' });
    const length = bytesHeader(req, 'Upload-Length');
    const checksum = parseChecksum(req.get('upload-checksum'));
    const state = await tus.write(viewer, String(req.params.id), { offset, body: req, sendsBytes: sendsBody(req), ...(length !== undefined ? { length } : {}), ...(checksum ? { checksum } : {}) });
    // A connection that broke mid-body was answered already (`answerClientErrors`): what arrived is kept.
    if (res.headersSent) return;
    describe(res, state);
    res.status(204).end();
  });

  const terminate = handle(async (req, res, ctx) => {
    await tus.terminate(await ctx.viewer(), String(req.params.id));
    res.status(204).end();
  });

  return { tusOptions: options, tusCreate: create, tusHead: head, tusPatch: patch, tusTerminate: terminate } satisfies Record<string, RequestHandler>;
}

export type TusHandlers = ReturnType<typeof tusHandlers>;
