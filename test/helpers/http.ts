/** A small HTTP client for tests: JSON in and out, and the cookies a browser would keep. */
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { cookieHeader, keepCookies, type SetCookie } from './cookies.ts';

export interface Reply<T = unknown> {
  status: number;
  body: T;
  headers: Headers;
  cookies: Record<string, SetCookie>;
}

export class Client {
  readonly url: string;
  readonly jar = new Map<string, string>();
  bearer: string | undefined;

  constructor(url: string) {
    this.url = url;
  }

  async request<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply<T>> {
    const send: Record<string, string> = { ...headers };
    if (body !== undefined && typeof body !== 'string') send['content-type'] = 'application/json';
    if (typeof body === 'string' && !send['content-type']) send['content-type'] = 'application/json';
    if (this.jar.size > 0) send.cookie = cookieHeader(this.jar);
    if (this.bearer) send.authorization = `Bearer ${this.bearer}`;
    const res = await fetch(this.url + path, {
      method,
      headers: send,
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const cookies = keepCookies(this.jar, res);
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, body: parsed as T, headers: res.headers, cookies };
  }

  get<T = any>(path: string, headers?: Record<string, string>) {
    return this.request<T>('GET', path, undefined, headers);
  }

  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('POST', path, body, headers);
  }
}

/** A file part of a multipart body. */
export interface FilePart {
  filename: string;
  data: Uint8Array;
  type?: string;
}

/**
 * Sends a real multipart/form-data body (built by fetch's FormData) with the client's cookies
 * or bearer token, and parses the JSON answer.
 */
export async function sendMultipart<T = any>(
  client: Client,
  method: string,
  path: string,
  fields: Record<string, string | number>,
  file?: FilePart,
  headers: Record<string, string> = {},
): Promise<Reply<T>> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, String(value));
  if (file) form.append('file', new Blob([file.data], { type: file.type ?? 'application/octet-stream' }), file.filename);
  const send: Record<string, string> = { ...headers };
  if (client.jar.size > 0) send.cookie = cookieHeader(client);
  if (client.bearer) send.authorization = `Bearer ${client.bearer}`;
  const res = await fetch(client.url + path, { method, headers: send, body: form });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON
  }
  return { status: res.status, body: body as T, headers: res.headers, cookies: {} };
}

/**
 * One exchange on a connection of its own, written as given (fetch would send only well-formed
 * requests, with `Host`, without `Expect` or `TRACE`): each of `parts` in turn, a moment apart,
 * then the answer as received, up to the server's close, split into its head and its body.
 */
export function rawExchange(url: string, ...parts: string[]): Promise<{ text: string; top: string; body: string; status: number; header(name: string): string | undefined }> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
    });
    socket.on('error', reject);
    socket.on('close', () => {
      const [top = '', body = ''] = text.split('\r\n\r\n', 2);
      const header = (name: string) => new RegExp(`^${name}: *(.*)$`, 'im').exec(top)?.[1];
      resolve({ text, top, body, status: Number(top.split(' ')[1]), header });
    });
    void (async () => {
      for (const part of parts) {
        if (!socket.writable) return;
        socket.write(part);
        if (parts.length > 1) await sleep(50);
      }
    })();
  });
}
