/**
 * The attack: a guest sends `PUT /attachment` announcing a 1 GB body and then sends it slowly,
 * or not at all. The server read (and threw away) the whole body before answering 401, and
 * uploads may take an hour to arrive: one connection, and its socket, held for up to an hour
 * per request, for an answer the headers had already decided.
 *
 * The fix: whatever the headers decide (no session: 401; not multipart: 400; a body announcing
 * more than the largest upload: 413; then, once the fields name the file's field, more than
 * that field allows: 413) is answered at once, before the body, with `Connection: close`.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUBMISSION, temporaryFiles, venueWithAuthor } from '../attachments/helpers.ts';
import { cookieHeader } from '../helpers/cookies.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitUntil } from '../helpers/wait.ts';

let server: TestServer;
let cookie: string;

beforeAll(async () => {
  server = await startServer();
  const { author } = await venueWithAuthor(server);
  cookie = cookieHeader(author);
});
afterAll(() => server.close());

const GB = 1024 ** 3;
const BOUNDARY = 'slow-upload-boundary';

interface Answer {
  status: number;
  headers: string;
  body: { status: number; name: string; message: string; error?: string };
}

/**
 * Sends the headers and `start` of the body, announcing `length` bytes, and never sends the
 * rest. The answer must come within `withinMs`.
 */
function announce(path: string, headers: Record<string, string>, length: number, start = '', withinMs = 3000): Promise<Answer> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => {
      const lines = Object.entries({ Host: '127.0.0.1', 'Content-Length': String(length), ...headers }).map(([k, v]) => `${k}: ${v}\r\n`);
      const method = path.startsWith('/attachment') ? 'PUT' : 'POST';
      socket.write(`${method} ${path} HTTP/1.1\r\n${lines.join('')}\r\n${start}`);
    });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${withinMs} ms`));
    }, withinMs);
    let text = '';
    socket.on('data', (data: Buffer) => {
      text += data.toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const body = text.slice(split + 4);
      if (split < 0 || !body.endsWith('}')) return;
      clearTimeout(timer);
      socket.destroy();
      resolve({ status: Number(text.slice(9, 12)), headers: text.slice(0, split).toLowerCase(), body: JSON.parse(body) as Answer['body'] });
    });
    socket.on('error', () => undefined);
  });
}

const multipart = { 'Content-Type': `multipart/form-data; boundary=${BOUNDARY}` };
const field = (name: string, value: string) => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;

describe('an upload the headers already refuse', () => {
  it.each(['/attachment', '/attachment/chunk'])('a guest announcing 1 GB to %s gets 401 at once, and the connection is closed', async (path) => {
    const res = await announce(path, multipart, GB);
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ status: 401, name: 'UnauthorizedError' });
    expect(res.headers).toContain('connection: close');
  });

  it('a guest with a garbage session cookie or bearer token gets 401 at once', async () => {
    const auths: Array<Record<string, string>> = [{ Cookie: 'service.accessToken=garbage' }, { Authorization: 'Bearer not.a.token' }];
    for (const auth of auths) {
      const res = await announce('/attachment', { ...multipart, ...auth }, GB);
      expect(res.status).toBe(401);
      expect(res.body.status).toBe(401);
    }
  });

  it('a signed-in person announcing more than the largest upload gets 413 at once', async () => {
    const res = await announce('/attachment', { ...multipart, Cookie: cookie }, GB);
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ status: 413, name: 'ValidationError' });
    expect(res.headers).toContain('connection: close');
    const chunk = await announce('/attachment/chunk', { ...multipart, Cookie: cookie }, server.config.maxChunkBytes * 2);
    expect(chunk.status).toBe(413);
  });

  it('a body that is not multipart is refused at once', async () => {
    for (const type of ['application/json', 'text/plain', 'multipart/form-data']) {
      const res = await announce('/attachment', { 'Content-Type': type, Cookie: cookie }, 10 * 1024 * 1024);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ status: 400, name: 'BadRequestError' });
    }
  });

  it('once the fields name a field allowing less than the body announces, it is 413 before the file is read', async () => {
    // The submission form's PDF field allows 50 MB; the server's largest upload is 100 MB.
    const start =
      field('name', 'pdf') +
      field('invitationId', SUBMISSION) +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="p.pdf"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.7\n`;
    const res = await announce('/attachment', { ...multipart, Cookie: cookie }, 80 * 1024 * 1024, start);
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ status: 413, name: 'ValidationError', message: expect.stringContaining('field') });
    await waitUntil(async () => (await temporaryFiles(server.dataDir)).length === 0, 'removing the temporary file');
    expect(await temporaryFiles(server.dataDir)).toEqual([]);
  });

  it('a JSON or form body announcing more than its parser takes is 413 at once, not after reading it all', async () => {
    const json = await announce('/notes', { 'Content-Type': 'application/json', Cookie: cookie }, GB, '{"invitation":');
    expect(json.status).toBe(413);
    expect(json.body).toMatchObject({ status: 413, name: 'ValidationError' });
    expect(json.headers).toContain('connection: close');
    const guest = await announce('/login', { 'Content-Type': 'application/json' }, GB);
    expect(guest.status).toBe(413);
    // The sign-in provider answers in OAuth's format.
    const form = await announce('/oidc/token', { 'Content-Type': 'application/x-www-form-urlencoded' }, GB, 'grant_type=');
    expect(form.status).toBe(400);
    expect(form.body).toMatchObject({ error: 'invalid_request' });
  });

  it('the server still answers afterwards', async () => {
    expect(await (await fetch(`${server.url}/health`)).json()).toEqual({ status: 'ok', database: 'ok' });
  });
});
