/**
 * What the tus tests share: tus-js-client (unmodified, its Node build) run to the end as a
 * promise, an HTTP stack that records every request it sends and every answer it gets (the
 * library's own `httpStack` option, around its own default stack), raw tus requests for what the
 * library does not send (a wrong checksum, another person's token), and a TCP line that counts
 * the bytes going towards the server and can drop every connection.
 */
import { createHash } from 'node:crypto';
import { connect, createServer, type Socket } from 'node:net';
import * as tus from 'tus-js-client';
import { expect } from 'vitest';
import { ErrorBody } from '../../shared/errors.ts';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';
import { SUBMISSION, venueWithAuthor } from './helpers.ts';

export const TUS_VERSION = '1.0.0';
export const TUS_EXTENSIONS = 'creation,creation-with-upload,creation-defer-length,termination,expiration,checksum,concatenation';
/** An `Upload-Expires` value: an RFC 9110 date (IMF-fixdate). */
export const HTTP_DATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/** A signed-in person: their profile id, a client holding their session cookies, and their access token. */
export interface Person {
  id: string;
  email: string;
  client: Client;
  token: string;
}

/** A new active person, signed in (`POST /login`). */
export async function signedInPerson(server: TestServer, fullname = 'Tus Author'): Promise<Person> {
  const user = await createActiveUser(server, { fullname });
  const { client, token } = await loggedIn(server, user.email);
  return { id: user.id, email: user.email, client, token };
}

/**
 * A server with the uploads venue (no human verification for uploads) and a signed-in author,
 * started before a file's tests and closed after them (`beforeAll`, `afterAll`): read them
 * through the getters once started.
 */
export function tusServerPerFile(before: (fn: () => Promise<void>) => void, after: (fn: () => Promise<void>) => void): { readonly server: TestServer; readonly author: Person } {
  let server: TestServer | undefined;
  let author: Person | undefined;
  before(async () => {
    server = await startServer({ UPLOAD_HUMAN_VERIFICATION_AFTER: '0' });
    await venueWithAuthor(server);
    author = await signedInPerson(server);
  });
  after(async () => {
    await server?.close();
  });
  return {
    get server() {
      if (!server) throw new Error('the server is not started yet');
      return server;
    },
    get author() {
      if (!author) throw new Error('the server is not started yet');
      return author;
    },
  };
}

/** tus-js-client's options for `person`'s upload of the submission's PDF in four parallel parts, without retries. */
export function parallelOptions(server: TestServer, person: Person, extra: tus.UploadOptions = {}): tus.UploadOptions {
  const metadata = metadataFor(SUBMISSION, 'pdf', 'paper.pdf');
  return { endpoint: `${server.url}/attachment/tus`, headers: { Authorization: `Bearer ${person.token}` }, metadata, metadataForPartialUploads: metadata, parallelUploads: 4, retryDelays: null, ...extra };
}

/** `Upload-Metadata` for a field of an invitation, as tus-js-client's `metadata` option. */
export function metadataFor(invitation: string, name: string, filename: string): Record<string, string> {
  return { invitation, name, filename };
}

/** The same, encoded as the header (`key base64,key base64`), for raw requests. */
export function encodeMetadata(metadata: Record<string, string>): string {
  return Object.entries(metadata)
    .map(([key, value]) => `${key} ${Buffer.from(value, 'utf8').toString('base64')}`)
    .join(',');
}

/** One request tus-js-client sent, and what came back (status 0: no answer, the connection failed). */
export interface Exchange {
  method: string;
  url: string;
  headers: Record<string, string>;
  /** Bytes of the body the library handed to the request. */
  bodyBytes: number;
  status: number;
  responseHeaders: Record<string, string | string[] | undefined>;
  responseBody: string;
}

/**
 * tus-js-client's own Node HTTP stack, with every exchange written down: the tests assert the
 * statuses and headers the library actually got, and the bytes it actually sent.
 */
export class RecordingHttpStack implements tus.HttpStack {
  readonly exchanges: Exchange[] = [];
  readonly #inner = new tus.DefaultHttpStack({});

  createRequest(method: string, url: string): tus.HttpRequest {
    const inner = this.#inner.createRequest(method, url);
    const exchanges = this.exchanges;
    return {
      getMethod: () => inner.getMethod(),
      getURL: () => inner.getURL(),
      setHeader: (header, value) => inner.setHeader(header, value),
      getHeader: (header) => inner.getHeader(header),
      setProgressHandler: (handler) => inner.setProgressHandler(handler),
      abort: () => inner.abort(),
      getUnderlyingObject: () => inner.getUnderlyingObject(),
      async send(body: unknown) {
        const headers: Record<string, string> = {};
        for (const name of ['Tus-Resumable', 'Upload-Length', 'Upload-Defer-Length', 'Upload-Offset', 'Upload-Metadata', 'Upload-Concat', 'Content-Type', 'Authorization']) {
          const value = inner.getHeader(name);
          if (value !== undefined) headers[name] = value;
        }
        const exchange: Exchange = { method, url, headers, bodyBytes: sizeOf(body), status: 0, responseHeaders: {}, responseBody: '' };
        exchanges.push(exchange);
        const res = await inner.send(body);
        exchange.status = res.getStatus();
        exchange.responseHeaders = (res.getUnderlyingObject() as { headers: Record<string, string | string[] | undefined> }).headers;
        exchange.responseBody = res.getBody();
        return res;
      },
    };
  }

  getName(): string {
    return 'RecordingHttpStack';
  }

  /** The exchanges of one method, in order. */
  of(method: string): Exchange[] {
    return this.exchanges.filter((e) => e.method === method);
  }
}

function sizeOf(body: unknown): number {
  if (body === null || body === undefined) return 0;
  if (body instanceof Uint8Array) return body.length;
  const size = (body as { size?: unknown }).size;
  return typeof size === 'number' ? size : 0;
}

/** How a tus-js-client upload ended. */
export type Outcome = { ok: true; upload: tus.Upload; lastResponse: tus.HttpResponse } | { ok: false; upload: tus.Upload; error: tus.DetailedError | Error };

/**
 * Runs an upload to its end: its success (the last answer, whose `Attachment-Url` the client
 * reads) or its error. `prepare` may resume it from a stored upload before it starts.
 */
export function runUpload(file: Buffer | NodeJS.ReadableStream, options: tus.UploadOptions, prepare?: (upload: tus.Upload) => Promise<void>): Promise<Outcome> {
  return new Promise((resolve) => {
    const upload = new tus.Upload(file as Buffer, {
      ...options,
      onSuccess: ({ lastResponse }) => resolve({ ok: true, upload, lastResponse }),
      onError: (error) => resolve({ ok: false, upload, error }),
    });
    void (prepare ? prepare(upload) : Promise.resolve()).then(() => upload.start(), (error: Error) => resolve({ ok: false, upload, error }));
  });
}

/** The status of the answer behind a failed upload (0: the connection failed, no answer). */
export function statusOf(outcome: Outcome): number {
  if (outcome.ok) return outcome.lastResponse.getStatus();
  const error = outcome.error as Partial<tus.DetailedError>;
  return error.originalResponse?.getStatus() ?? 0;
}

/** A raw answer of the tus endpoint, its body parsed when it is JSON. */
export interface TusReply {
  status: number;
  headers: Headers;
  body: any;
}

/**
 * A raw tus request on the test server itself (whatever origin `target` names: a `Location`
 * carries the public address), with `Tus-Resumable: 1.0.0` unless `headers` says otherwise
 * (`null` leaves it out). Sent with the test's `fetch`, so the answer is checked against the API
 * document too.
 */
export async function tusRequest(server: TestServer, method: string, target: string, options: { token?: string; headers?: Record<string, string | null>; body?: Uint8Array } = {}): Promise<TusReply> {
  const path = new URL(target, server.url).pathname;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries({ 'Tus-Resumable': TUS_VERSION, ...options.headers })) if (value !== null) headers[name] = value;
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  if (options.body) headers['Content-Type'] ??= 'application/offset+octet-stream';
  const res = await fetch(server.url + path, { method, headers, body: options.body });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON
  }
  return { status: res.status, headers: res.headers, body };
}

/** A refusal: the spec's Error body with the answer's status, and `Tus-Resumable`. */
export function expectRefusal(reply: TusReply, status: number): void {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  expect(reply.headers.get('tus-resumable')).toBe('1.0.0');
  expect(ErrorBody.safeParse(reply.body).success, JSON.stringify(reply.body)).toBe(true);
  expect(reply.body.status).toBe(status);
}

/** Writes `lines` (CRLF-joined, the last one as is) on a new connection to `base`; everything it answers until it closes. */
export function rawRequest(base: string, lines: string[]): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let answer = '';
    socket.on('connect', () => socket.write(`${lines.slice(0, -1).join('\r\n')}\r\n${lines.at(-1)}`, 'latin1'));
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

/**
 * A file's raw tus calls on `context()`'s server, by its author unless another person is given:
 * a creation without a body (its upload URL), a `PATCH` at an offset, and reading a stored
 * file back.
 */
export function tusCalls(context: () => { server: TestServer; author: Person }) {
  return {
    async create(length: number, metadata = metadataFor(SUBMISSION, 'pdf', 'paper.pdf'), person: Person = context().author): Promise<string> {
      const res = await tusRequest(context().server, 'POST', '/attachment/tus', { token: person.token, headers: { 'Upload-Length': String(length), 'Upload-Metadata': encodeMetadata(metadata) } });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.headers.get('location') ?? '';
    },
    patch: (url: string, offset: number, body: Uint8Array, headers: Record<string, string> = {}, person: Person = context().author) =>
      tusRequest(context().server, 'PATCH', url, { token: person.token, headers: { 'Upload-Offset': String(offset), ...headers }, body }),
    async readBack(url: string, person: Person = context().author): Promise<Buffer> {
      const res = await fetch(context().server.url + url, { headers: { authorization: `Bearer ${person.token}` } });
      expect(res.status).toBe(200);
      return Buffer.from(await res.arrayBuffer());
    },
  };
}

/** `Upload-Checksum` for bytes: the algorithm and the base64 digest. */
export function checksum(algorithm: 'sha1' | 'sha256' | 'md5', data: Uint8Array): string {
  return `${algorithm} ${createHash(algorithm).update(data).digest('base64')}`;
}

/** The upload's path, from a `Location` or an upload URL. */
export const pathOf = (url: string) => new URL(url).pathname;

/** A TCP line in front of a server that counts the bytes going towards it, and can drop every connection. */
export interface Line {
  url: string;
  /** Where connections go; set once the server listens (its `BASE_URL` names the line). */
  target: string;
  /** Bytes sent towards the server since the line started (or since `resetCount`). */
  readonly bytesToServer: number;
  resetCount(): void;
  /**
   * Forwards `bytes` more towards the server, then holds the connection that reached the limit
   * (nothing more goes through it) until `cut`: the server is then mid-request, for as long as
   * the test needs to see it so.
   */
  holdAfter(bytes: number): void;
  /** Whether a connection is held. */
  readonly held: boolean;
  /** Destroys every connection, as a network that drops them; later ones go through. */
  cut(): void;
  close(): Promise<void>;
}

/**
 * Starts the line on 127.0.0.1. Like `test/helpers/proxy.ts`, but its target is set after it
 * listens (a tus `Location` carries the server's public address, so the server must know the
 * line's address before it starts), it counts what it forwards, and it holds a request midway
 * before cutting it, so that a test cuts a request the server is reading, not one it has yet to see.
 */
export async function startLine(): Promise<Line> {
  const open = new Set<Socket>();
  let budget: number | null = null;
  let held = false;
  let forwarded = 0;
  const server = createServer((client) => {
    const { hostname, port } = new URL(line.target);
    const upstream = connect(Number(port), hostname);
    open.add(client);
    open.add(upstream);
    client.on('data', (data: Buffer) => {
      if (held) return;
      if (budget !== null && data.length >= budget) {
        const kept = data.subarray(0, budget);
        budget = null;
        held = true;
        client.pause();
        forwarded += kept.length;
        upstream.write(kept);
        return;
      }
      if (budget !== null) budget -= data.length;
      forwarded += data.length;
      upstream.write(data);
    });
    upstream.on('data', (data: Buffer) => client.write(data));
    const close = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    for (const socket of [client, upstream]) {
      socket.on('close', close);
      socket.on('error', close);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const line: Line = {
    url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`,
    target: '',
    get bytesToServer() {
      return forwarded;
    },
    resetCount() {
      forwarded = 0;
    },
    holdAfter(bytes) {
      budget = bytes;
    },
    get held() {
      return held;
    },
    cut() {
      for (const socket of open) socket.destroy();
      open.clear();
      held = false;
      budget = null;
    },
    async close() {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return line;
}
