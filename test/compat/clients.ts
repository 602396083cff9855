/**
 * Requests built the way the real platform's official clients build them, so the contract
 * tests in this folder send exactly what those clients send. Written from reading the clients
 * (openreview-py `openreview/api/client.py`, openreview-web `lib/api-client.js`); no code of
 * theirs is copied. Each test cites the client file and line it follows.
 */
import { randomBytes } from 'node:crypto';
import { cookieHeader, keepCookies } from '../helpers/cookies.ts';

export interface Answer {
  status: number;
  headers: Headers;
  /** The JSON answer, or the raw bytes of a file. */
  json: any;
  bytes: Buffer;
}

/** The session cookies a `requests.Session` (Python) or a browser (web) keeps. */
class CookieJar {
  readonly #cookies = new Map<string, string>();

  header(): string | undefined {
    return this.#cookies.size > 0 ? cookieHeader(this.#cookies) : undefined;
  }

  keep(headers: Headers): void {
    keepCookies(this.#cookies, headers);
  }
}

async function answer(res: Response): Promise<Answer> {
  const bytes = Buffer.from(await res.arrayBuffer());
  let json: unknown;
  if (/^application\/json/.test(res.headers.get('content-type') ?? '')) json = JSON.parse(bytes.toString('utf8'));
  return { status: res.status, headers: res.headers, json, bytes };
}

type PyValue = string | number | boolean | null | undefined | Array<string | number>;

/**
 * `requests`' query encoding, as the Python client uses it: keys whose value is None are left
 * out, a list becomes the key repeated, booleans are written `true`/`false` by
 * `tools.format_params` (tools.py:99-115).
 */
export function pythonQuery(params: Record<string, PyValue>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === null || value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) search.append(key, typeof item === 'boolean' ? String(item) : String(item));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

/**
 * The Python client's HTTP layer (client.py:110-124, 171-188): a `requests.Session` that sends
 * `User-Agent: openreview-py/…`, `Accept: application/json`, and after sign-in
 * `Authorization: Bearer <token>`, keeps any cookie the server sets, and sends bodies with
 * `json=` (so Python's None travels as JSON null).
 */
export class PythonClient {
  readonly #jar = new CookieJar();
  readonly baseurl: string;
  token: string | undefined;

  constructor(baseurl: string) {
    this.baseurl = baseurl;
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    const headers: Record<string, string> = { 'User-Agent': 'openreview-py/1.52.0 (Python/3.11)', Accept: 'application/json', ...extra };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    const cookie = this.#jar.header();
    if (cookie) headers.Cookie = cookie;
    return headers;
  }

  async send(method: string, path: string, opts: { params?: Record<string, PyValue>; json?: unknown; headers?: Record<string, string> } = {}): Promise<Answer> {
    const headers = this.headers(opts.headers);
    if (opts.json !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(`${this.baseurl}${path}${pythonQuery(opts.params ?? {})}`, {
      method,
      headers,
      ...(opts.json !== undefined ? { body: JSON.stringify(opts.json) } : {}),
    });
    this.#jar.keep(res.headers);
    return answer(res);
  }

  /**
   * `put_attachment(file_path, invitation, name)` (client.py:948-972): one `PUT /attachment`
   * whose parts are, in this order, `invitationId`, `name` (text parts without a filename or a
   * type) and `file`, whose filename is the path exactly as the caller passed it (often an
   * absolute path) and which carries no Content-Type of its own.
   */
  async putAttachment(filePath: string, data: Uint8Array, invitation: string, name: string): Promise<Answer> {
    const boundary = randomBytes(16).toString('hex');
    const text = (field: string, value: string) => Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${field}"\r\n\r\n${value}\r\n`);
    const body = Buffer.concat([
      text('invitationId', invitation),
      text('name', name),
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filePath}"\r\n\r\n`),
      data,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const res = await fetch(`${this.baseurl}/attachment`, {
      method: 'PUT',
      headers: { ...this.headers(), 'Content-Type': `multipart/form-data; boundary=${boundary}` },
      body,
    });
    this.#jar.keep(res.headers);
    return answer(res);
  }
}

/**
 * The web frontend's request layer (lib/api-client.js:84-150): `credentials: 'include'` (the
 * session is the cookies), `Accept: application/json,text/*;q=0.99`, JSON bodies sent as
 * `application/json; charset=UTF-8`, and query arrays as repeated keys with null values left out.
 */
export class WebClient {
  readonly #jar = new CookieJar();
  readonly baseurl: string;

  constructor(baseurl: string) {
    this.baseurl = baseurl;
  }

  async send(method: string, path: string, data?: Record<string, unknown>, extra: Record<string, string> = {}): Promise<Answer> {
    const headers: Record<string, string> = { Accept: 'application/json,text/*;q=0.99', Origin: this.baseurl, ...extra };
    const cookie = this.#jar.header();
    if (cookie) headers.Cookie = cookie;
    let url = `${this.baseurl}${path}`;
    let body: string | FormData | undefined;
    if (method === 'GET' && data) {
      const search = new URLSearchParams();
      for (const key of Object.keys(data).sort()) {
        const value = data[key];
        if (value === null || value === undefined) continue;
        for (const item of Array.isArray(value) ? value : [value]) search.append(key, String(item));
      }
      url += `?${search.toString()}`;
    } else if (data) {
      headers['Content-Type'] = 'application/json; charset=UTF-8';
      body = JSON.stringify(data);
    }
    const res = await fetch(url, { method, headers, ...(body !== undefined ? { body } : {}) });
    this.#jar.keep(res.headers);
    return answer(res);
  }

  /**
   * One chunk as `FileUploadWidget.js` (lines 32-45) sends it: a FormData with `invitationId`,
   * `name`, `chunkIndex` (counted from 1), `totalChunks`, `clientUploadId`, then the file slice
   * under the original file name; the browser sets the multipart boundary.
   */
  async putChunk(fields: { invitationId: string; name: string; chunkIndex: number; totalChunks: number; clientUploadId: string }, chunk: Uint8Array, filename: string): Promise<Answer> {
    const form = new FormData();
    form.append('invitationId', fields.invitationId);
    form.append('name', fields.name);
    form.append('chunkIndex', String(fields.chunkIndex));
    form.append('totalChunks', String(fields.totalChunks));
    form.append('clientUploadId', fields.clientUploadId);
    form.append('file', new Blob([chunk]), filename);
    const headers: Record<string, string> = { Accept: 'application/json,text/*;q=0.99', Origin: this.baseurl };
    const cookie = this.#jar.header();
    if (cookie) headers.Cookie = cookie;
    const res = await fetch(`${this.baseurl}/attachment/chunk`, { method: 'PUT', headers, body: form });
    this.#jar.keep(res.headers);
    return answer(res);
  }
}
