/**
 * Uploads and downloads, which tRPC does not carry: multipart `PUT /attachment` for a small
 * file, `PUT /attachment/chunk` for a large one, `GET /attachment` to read a file back.
 *
 * An upload checks the file against the field's rules before sending a byte, sends chunks a
 * few at a time, retries a failed chunk with backoff, and resumes from the server's status map:
 * the upload id is derived from the file's content and the field, so calling `upload` again
 * with the same file after an interruption sends only the chunks the server does not have,
 * and a different file never continues another's upload.
 */
import { checkFileFor, ChunkedUploadState, ChunkStatus, UploadResult, UploadRules } from '../shared/index.ts';
import { ApiError, type Session } from './transport.ts';

const MB = 1024 * 1024;

export interface Progress {
  /** Bytes the server has confirmed (or, for a download, bytes read). */
  loaded: number;
  total: number;
}

export interface UploadOptions {
  invitationId: string;
  /** The form field the file is for, e.g. `pdf`. */
  name: string;
  /** The file's name, when `file` is a Blob rather than a File; its extension is checked. */
  filename?: string;
  /** Bytes per chunk (5 MB): a larger file goes in chunks. Capped by the server's limit. */
  chunkSize?: number;
  /** Chunks in flight at once (3). */
  concurrency?: number;
  /** Retries of one failed request, with exponential backoff (4). */
  retries?: number;
  /**
   * A human-verification token, once the server asks for one (`HumanVerificationRequiredError`
   * after many uploads in an hour); sent with every request of this upload.
   */
  humanVerificationToken?: string;
  /** The id grouping the chunks; by default derived from the file, so a new call resumes. */
  clientUploadId?: string;
  onProgress?: (progress: Progress) => void;
  signal?: AbortSignal;
}

export interface DownloadOptions {
  /** The note whose file is wanted. */
  id: string;
  /** The field holding the file (`pdf`). */
  name?: string;
  onProgress?: (progress: Progress) => void;
  signal?: AbortSignal;
}

export interface DownloadedFile {
  filename: string;
  contentType: string;
  /** In bytes, when the server said (it always does for one file). */
  size: number | undefined;
  /** The file's SHA-1, from its ETag. */
  sha1: string | undefined;
  /** The bytes, read as they arrive; read it once. */
  stream: ReadableStream<Uint8Array>;
}

/** Statuses worth another try: the request may succeed later as it is. */
const TRANSIENT = new Set([408, 429, 500, 502, 503, 504]);

/** The server's own rule (`checkFileFor` in shared/), applied before a byte is sent. */
export function checkFile(rules: UploadRules, filename: string, size: number): void {
  const verdict = checkFileFor(rules, filename, size);
  if ('message' in verdict) throw new ApiError({ status: verdict.status, name: 'ValidationError', message: verdict.message, details: { path: 'file' } });
}

function abortable(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The longest a server's `Retry-After` is waited for: beyond it, the upload fails instead. */
const MAX_RETRY_AFTER_MS = 60_000;

/** `Retry-After` in seconds or as an HTTP date, in milliseconds (capped); undefined if absent. */
function retryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  const ms = /^\d+$/.test(value.trim()) ? Number(value) * 1000 : Date.parse(value) - Date.now();
  return Number.isFinite(ms) ? Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms)) : undefined;
}

/** Sends a request until it succeeds, fails for good (a 4xx), or runs out of retries. */
async function withRetries(send: () => Promise<Response>, retries: number, signal: AbortSignal | undefined): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    let retryAfterMs: number | undefined;
    try {
      const response = await send();
      if (response.ok || !TRANSIENT.has(response.status) || attempt >= retries) return response;
      retryAfterMs = retryAfter(response.headers.get('retry-after'));
      await response.body?.cancel().catch(() => undefined);
    } catch (error) {
      // A dropped connection is a TypeError from fetch; a cancellation is the caller's.
      if (signal?.aborted) throw signal.reason;
      if (attempt >= retries || !(error instanceof TypeError)) throw error;
    }
    // Exponential backoff with jitter, unless the server said how long to wait.
    await abortable(retryAfterMs ?? Math.min(8000, 250 * 2 ** attempt) * (0.5 + Math.random() / 2), signal);
  }
}

/**
 * An id for the chunks of one file for one field: the SHA-256 of the field, the name, the chunk
 * size and the SHA-256 of every chunk. The same file resumes the same upload; a file that
 * differs anywhere gets another. Read a chunk at a time, so memory stays at one chunk.
 */
async function deriveUploadId(file: Blob, filename: string, options: UploadOptions, chunkSize: number): Promise<string> {
  const digests: Uint8Array[] = [new TextEncoder().encode([options.invitationId, options.name, filename, file.size, chunkSize].join('\n'))];
  for (let offset = 0; offset < file.size; offset += chunkSize) {
    if (options.signal?.aborted) throw options.signal.reason;
    const part = await file.slice(offset, offset + chunkSize).arrayBuffer();
    digests.push(new Uint8Array(await crypto.subtle.digest('SHA-256', part)));
  }
  const all = new Uint8Array(digests.reduce((n, d) => n + d.length, 0));
  digests.reduce((at, d) => (all.set(d, at), at + d.length), 0);
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', all));
  return `u${Array.from(digest.subarray(0, 12), (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

export class Files {
  readonly #session: Session;

  constructor(session: Session) {
    this.#session = session;
  }

  /** What a file for this field must be (`GET /attachment/rules`). */
  async rules(invitationId: string, name: string): Promise<UploadRules> {
    const query = new URLSearchParams({ invitationId, name });
    return UploadRules.parse(await this.#session.json('GET', `/attachment/rules?${query}`));
  }

  /** Uploads a file for an invitation's field; answers the URL to put in the note. */
  async upload(file: Blob, options: UploadOptions): Promise<{ url: string }> {
    const filename = options.filename ?? ('name' in file && typeof file.name === 'string' ? file.name : '');
    if (!filename) throw new TypeError('upload: give options.filename when the file is a Blob');
    const rules = await this.rules(options.invitationId, options.name);
    checkFile(rules, filename, file.size);
    const asked = options.chunkSize ?? 5 * MB;
    if (!Number.isSafeInteger(asked) || asked < 1) throw new TypeError(`upload: chunkSize must be a whole number of bytes, not ${asked}`);
    const chunkSize = Math.min(asked, rules.maxChunkBytes);
    if (file.size <= chunkSize && file.size <= rules.maxUploadBytes) return this.#whole(file, filename, options);
    return this.#chunked(file, filename, options, chunkSize);
  }

  /** One upload request, retried when it may succeed later; its failure is an ApiError. */
  async #put(path: string, form: () => FormData, options: UploadOptions, signal: AbortSignal): Promise<unknown> {
    const headers: Record<string, string> = options.humanVerificationToken ? { 'cf-turnstile-token': options.humanVerificationToken } : {};
    const response = await withRetries(
      () => this.#session.fetch(`${this.#session.baseUrl}${path}`, { method: 'PUT', body: form(), headers, signal }),
      options.retries ?? 4,
      signal,
    );
    if (!response.ok) throw await ApiError.from(response);
    return response.json();
  }

  async #whole(file: Blob, filename: string, options: UploadOptions): Promise<{ url: string }> {
    options.onProgress?.({ loaded: 0, total: file.size });
    const signal = options.signal ?? new AbortController().signal;
    const result = UploadResult.parse(await this.#put('/attachment', () => this.#form(file, filename, options, {}), options, signal));
    options.onProgress?.({ loaded: file.size, total: file.size });
    return result;
  }

  async #chunked(file: Blob, filename: string, options: UploadOptions, chunkSize: number): Promise<{ url: string }> {
    const totalChunks = Math.ceil(file.size / chunkSize);
    if (totalChunks > 10_000) throw new TypeError(`upload: ${totalChunks} chunks is more than the 10 000 allowed; use a larger chunkSize`);
    const clientUploadId = options.clientUploadId ?? (await deriveUploadId(file, filename, options, chunkSize));
    const sizeOf = (index: number) => Math.min(chunkSize, file.size - index * chunkSize);

    const state = await this.#state(clientUploadId);
    if (state?.url) {
      options.onProgress?.({ loaded: file.size, total: file.size });
      return { url: state.url };
    }
    const held = new Set(Object.entries(state?.chunks ?? {}).filter(([, s]) => s === 'completed').map(([index]) => Number(index)));
    // Resuming with other chunk boundaries would assemble a different file: refused.
    const misfit = state && (state.totalChunks !== totalChunks || [...held].some((i) => state.chunkBytes[String(i)] !== sizeOf(i)));
    if (misfit) {
      throw new ApiError({
        status: 400,
        name: 'ValidationError',
        message: `The upload ${clientUploadId} was started with other chunks (${state.totalChunks} of them): use another clientUploadId`,
        details: { path: 'clientUploadId' },
      });
    }
    const pending = Array.from({ length: totalChunks }, (_, i) => i).filter((i) => !held.has(i));
    // Every chunk is there but no file: its assembly failed or was cut short. Sending the last
    // chunk again (the server keeps its first copy) makes the server assemble it again.
    if (pending.length === 0) pending.push(totalChunks - 1);
    let loaded = [...held].reduce((sum, i) => sum + sizeOf(i), 0);
    options.onProgress?.({ loaded, total: file.size });

    // The first chunk that fails for good stops the others: nothing goes on in the background.
    const stop = new AbortController();
    const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
    let url: string | undefined;
    const sendChunk = async (index: number) => {
      const fields = { clientUploadId, chunkIndex: String(index), totalChunks: String(totalChunks) };
      const part = file.slice(index * chunkSize, index * chunkSize + sizeOf(index));
      const answer = await this.#put('/attachment/chunk', () => this.#form(part, filename, options, fields), options, signal);
      const done = UploadResult.safeParse(answer);
      if (done.success) url = done.data.url;
      else ChunkStatus.parse(answer);
      if (!held.has(index)) loaded += sizeOf(index);
      options.onProgress?.({ loaded, total: file.size });
    };

    const queue = [...pending];
    const worker = async () => {
      for (let index = queue.shift(); index !== undefined; index = queue.shift()) {
        if (signal.aborted) throw signal.reason;
        await sendChunk(index);
      }
    };
    const workers = Array.from({ length: Math.max(1, Math.min(options.concurrency ?? 3, pending.length)) }, () =>
      worker().catch((error: unknown) => {
        stop.abort(error);
        throw error;
      }),
    );
    const outcomes = await Promise.allSettled(workers);
    // The caller's cancellation, else the first failure (the others are its echo).
    if (options.signal?.aborted) throw options.signal.reason;
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (failed) throw stop.signal.reason ?? failed.reason;

    // Two last chunks arriving together: one assembles, the other may answer the status map.
    url ??= (await this.#state(clientUploadId))?.url;
    if (!url) throw new ApiError({ status: 500, name: 'InternalServerError', message: 'Every chunk was sent but the file was not assembled; try again' });
    return { url };
  }

  /** Where an upload stands (`GET /attachment/chunk/status`), or null before its first chunk. */
  async #state(clientUploadId: string): Promise<ChunkedUploadState | null> {
    try {
      return ChunkedUploadState.parse(await this.#session.json('GET', `/attachment/chunk/status?clientUploadId=${encodeURIComponent(clientUploadId)}`));
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return null;
      throw error;
    }
  }

  #form(part: Blob, filename: string, options: UploadOptions, fields: Record<string, string>): FormData {
    // The fields go before the file, so the server knows the field's size limit before the bytes arrive.
    const form = new FormData();
    form.append('name', options.name);
    form.append('invitationId', options.invitationId);
    for (const [key, value] of Object.entries(fields)) form.append(key, value);
    form.append('file', part, filename);
    return form;
  }

  /** A note's file (`GET /attachment`), as a stream with its name, type, size and SHA-1. */
  async download(options: DownloadOptions): Promise<DownloadedFile> {
    const query = new URLSearchParams({ id: options.id, name: options.name ?? 'pdf' });
    const response = await this.#session.fetch(`${this.#session.baseUrl}/attachment?${query}`, { signal: options.signal ?? null });
    if (!response.ok || !response.body) throw await ApiError.from(response);
    const length = response.headers.get('content-length');
    const size = length === null ? undefined : Number(length);
    const disposition = response.headers.get('content-disposition') ?? '';
    let loaded = 0;
    const counted = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          loaded += chunk.byteLength;
          options.onProgress?.({ loaded, total: size ?? loaded });
          controller.enqueue(chunk);
        },
      }),
    );
    return {
      filename: /filename="([^"]+)"/.exec(disposition)?.[1] ?? `${options.id}.${options.name ?? 'pdf'}`,
      contentType: response.headers.get('content-type') ?? 'application/octet-stream',
      size,
      sha1: response.headers.get('etag')?.replace(/"/g, '') || undefined,
      stream: counted,
    };
  }
}
