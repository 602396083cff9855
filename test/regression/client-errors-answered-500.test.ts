/**
 * The attack: requests that are merely malformed, from any guest, answered 500 (and some were
 * not even logged): a path parameter with broken percent-encoding (`/activatable/%E0%A4%A`,
 * `/pdf/%zz`), a body whose `Content-Encoding` does not decode, an OpenID Connect form with
 * more than 50 parameters, JSON nested 10 000 deep on `/trpc` (tRPC re-stringifies a parsed
 * body recursively: the stack overflowed). A 500 says the server is broken, pages whoever is
 * on call, and hides real failures in the noise. Each is now a 4xx with the Error body (the
 * sign-in provider's endpoints: OAuth's error JSON), and nothing is written.
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdfBytes, submitPaper, venueWithAuthor } from '../attachments/helpers.ts';
import { cookieHeader } from '../helpers/cookies.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

async function send(method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer) {
  const res = await fetch(server.url + path, { method, headers, body });
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type') ?? '', json: /json/.test(res.headers.get('content-type') ?? '') ? JSON.parse(text) : text };
}

function expectErrorBody(res: { status: number; json: unknown }, status: number) {
  expect(res.status).toBe(status);
  expect(res.json).toEqual({ status, name: expect.any(String), message: expect.any(String), details: { reqId: expect.any(String) } });
}

const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
const json = { 'content-type': 'application/json' };

describe('malformed requests are 4xx, never 500', () => {
  it.each(['/activatable/%E0%A4%A', '/pdf/%zz', '/resettable/%', '/venues/%E0/config'])('GET %s: broken percent-encoding in a path parameter', async (path) => {
    expectErrorBody(await send('GET', path), 400);
  });

  it('PUT /reset/%ff: the same on a write', async () => {
    expectErrorBody(await send('PUT', '/reset/%ff', json, '{"password":"Good-Password1"}'), 400);
  });

  it.each([
    ['gzip', Buffer.from('not gzip at all')],
    ['deflate', Buffer.from('not deflate')],
    ['br', Buffer.from('not brotli')],
    ['gzip', gzipSync(Buffer.from('{"id": "a@b.org", "password": "x"')).subarray(0, 12)],
  ])('a body with Content-Encoding %s that does not decode', async (encoding, body) => {
    expectErrorBody(await send('POST', '/login', { ...json, 'content-encoding': encoding }, body), 400);
  });

  it('an unknown Content-Encoding or charset', async () => {
    expectErrorBody(await send('POST', '/login', { ...json, 'content-encoding': 'zstd-from-the-future' }, '{}'), 400);
    expectErrorBody(await send('POST', '/login', { 'content-type': 'application/json; charset=klingon' }, '{}'), 400);
  });

  it('a truncated JSON body', async () => {
    expectErrorBody(await send('POST', '/login', json, '{"id":'), 400);
  });

  it.each([
    ['POST', '/trpc/accounts.login', deep(10_000)],
    ['POST', '/trpc/accounts.login', `{"id":${deep(10_000)},"password":"x"}`],
    ['POST', '/login', `{"id":"a@b.org","password":"x","extra":${deep(10_000)}}`],
    ['POST', '/notes', `{"invitation":"x","content":{"title":{"value":${deep(5_000)}}}}`],
  ])('%s %s: JSON nested thousands deep', async (method, path, body) => {
    expectErrorBody(await send(method, path, json, body), 400);
  });

  it('a tRPC query whose input is nested too deeply', async () => {
    expectErrorBody(await send('GET', `/trpc/accounts.tildeUsername?input=${deep(4_000)}`), 400);
  });

  it('a tRPC batch of too many calls is a 400 Error body (tRPC itself answered text/plain)', async () => {
    const res = await send('GET', `/trpc/${Array.from({ length: 11 }, () => 'accounts.tildeUsername').join(',')}?batch=1`);
    expect(res.type).toMatch(/^application\/json/);
    expectErrorBody(res, 400);
  });

  it('a tRPC form body past the size limit is 413', async () => {
    const form = new FormData();
    form.append('id', 'a@b.org');
    form.append('password', 'x'.repeat(2 * 1024 * 1024));
    const res = await fetch(`${server.url}/trpc/accounts.login`, { method: 'POST', body: form });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { data: { error: unknown } } }).error.data.error).toMatchObject({ status: 413 });
  });

  it.each(['/oidc/token', '/oidc/revoke', '/oidc/userinfo'])('POST %s with more than 50 form parameters is OAuth invalid_request', async (path) => {
    const form = Array.from({ length: 60 }, (_, i) => `p${i}=v`).join('&');
    const res = await send('POST', path, { 'content-type': 'application/x-www-form-urlencoded' }, form);
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
  });

  it.each(['/oidc/login', '/oidc/consent', '/oidc/authorize'])('POST %s with more than 50 form parameters is an error page', async (path) => {
    const form = Array.from({ length: 60 }, (_, i) => `p${i}=v`).join('&');
    const res = await send('POST', path, { 'content-type': 'application/x-www-form-urlencoded' }, form);
    expect(res.status).toBe(413);
    expect(res.type).toMatch(/text\/html/);
  });

  it('nothing of it was an unexpected error, and the server still answers', async () => {
    expect(server.logs.filter((line) => JSON.parse(line).level >= 50)).toEqual([]);
    expect((await send('GET', '/health')).json).toEqual({ status: 'ok', database: 'ok' });
  });
});

describe('a download with a condition the file does not meet', () => {
  it('If-Match or If-Unmodified-Since that fails is a 412 (RFC 9110 §13.1.1), not a 500', async () => {
    const { author, authorId } = await venueWithAuthor(server);
    const { url, note } = await submitPaper(author, authorId, pdfBytes(3000));
    const cookie = cookieHeader(author);
    const conditions: Array<Record<string, string>> = [{ 'if-match': '"not-this-file"' }, { 'if-unmodified-since': 'Mon, 01 Jan 1990 00:00:00 GMT' }];
    for (const condition of conditions) {
      for (const path of [url, `/pdf?id=${note.body.id}`, `/attachment?id=${note.body.id}&name=pdf`]) {
        expectErrorBody(await send('GET', path, { cookie, ...condition }), 412);
      }
    }
  });
});
