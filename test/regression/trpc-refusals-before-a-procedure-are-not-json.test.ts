/**
 * Found by an independent fuzz of the HTTP layer. What tRPC refuses before any procedure runs
 * was answered outside the Error body: `text/plain` (a POST whose Content-Type tRPC does not
 * read, or has none; a path that does not percent-decode; a batch mixing a query and a
 * mutation; a batch past the limit whose commas were sent as `%2C`, which the count before tRPC
 * did not split on) or no Content-Type at all (a `Host` tRPC cannot make a URL of: 400 "Invalid
 * URL"). Each is refused before tRPC with the spec's Error body, `application/json`.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

/**
 * Sends the request line, `headers` (a `Host` of 127.0.0.1 unless they have one) and `body` as
 * written: fetch would refuse or mend the malformed ones. Reads the answer up to the close.
 */
function raw(line: string, headers: string[] = [], body = ''): Promise<{ status: number; type: string; body: string }> {
  const { port } = new URL(server.url);
  const all = [...(headers.some((h) => /^host:/i.test(h)) ? [] : ['Host: 127.0.0.1']), ...headers, 'Connection: close', ...(body ? [`Content-Length: ${Buffer.byteLength(body)}`] : [])];
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const answer = Buffer.concat(received);
      const cut = answer.indexOf('\r\n\r\n');
      const top = answer.subarray(0, cut).toString('latin1');
      const rest = answer.subarray(cut + 4);
      // tRPC's own answers are chunked; the Error body has a Content-Length.
      const text = (/^transfer-encoding: *chunked/im.test(top) ? unchunked(rest) : rest).toString('utf8');
      resolve({ status: Number(top.split(' ')[1]), type: /^content-type: *(.*)$/im.exec(top)?.[1] ?? '', body: text });
    });
    socket.write(`${line} HTTP/1.1\r\n${all.join('\r\n')}\r\n\r\n${body}`);
  });
}

/** A chunked body's bytes, its chunks joined. */
function unchunked(body: Buffer): Buffer {
  const chunks: Buffer[] = [];
  for (let at = 0; ; ) {
    const end = body.indexOf('\r\n', at);
    const size = Number.parseInt(body.subarray(at, end).toString('latin1'), 16);
    if (!(size > 0)) return Buffer.concat(chunks);
    chunks.push(body.subarray(end + 2, end + 2 + size));
    at = end + 2 + size + 2;
  }
}

function expectErrorBody(res: { status: number; type: string; body: string }, status: number): void {
  expect(res.status).toBe(status);
  expect(res.type).toMatch(/^application\/json/);
  expect(JSON.parse(res.body)).toEqual({ status, name: expect.any(String), message: expect.any(String), details: { reqId: expect.any(String) } });
}

const batchOf = (n: number, separator: string) => Array.from({ length: n }, () => 'accounts.tildeUsername').join(separator);

describe('a request tRPC cannot make calls of', () => {
  it.each([['Content-Type: text/plain'], ['Content-Type: application/x-www-form-urlencoded'], ['Content-Type: ;;;'], []])('POST /trpc/accounts.login with %j is a 400 Error body', async (...headers) => {
    expectErrorBody(await raw('POST /trpc/accounts.login', headers, '{}'), 400);
  });

  it.each(['OPTIONS', 'DELETE', 'PROPFIND'])('%s /trpc/accounts.login is a 404 Error body', async (method) => {
    expectErrorBody(await raw(`${method} /trpc/accounts.login`), 404);
  });

  it.each([
    ['a path that does not percent-decode', '/trpc/%zz'],
    ['a batch mixing a query and a mutation', '/trpc/accounts.tildeUsername,accounts.logout?batch=1'],
    ['a batch past the limit, separated by %2C', `/trpc/${batchOf(11, '%2C')}?batch=1`],
    ['a batch listing notes twice (up to a thousand each)', '/trpc/venue.notes,venue.notes?batch=1'],
    ['connectionParams that are not JSON', '/trpc/accounts.tildeUsername?connectionParams=zz'],
  ])('GET with %s is a 400 Error body', async (_what, path) => {
    expectErrorBody(await raw(`GET ${path}`), 400);
  });

  it.each(['Host: [::1', 'Host: a b', 'Host: x:99999'])('GET with %s is a 400 Error body', async (host) => {
    expectErrorBody(await raw('GET /trpc/accounts.tildeUsername', [host]), 400);
  });

  it('a GET with a form Content-Type, or a streamed answer outside a batch, is a 400 Error body', async () => {
    expectErrorBody(await raw('GET /trpc/accounts.tildeUsername', ['Content-Type: multipart/form-data; boundary=x']), 400);
    expectErrorBody(await raw('GET /trpc/accounts.tildeUsername', ['trpc-accept: application/jsonl']), 400);
  });
});

describe('what tRPC can make calls of still reaches it', () => {
  it('a batch of queries separated by %2C runs, and a procedure’s refusal keeps tRPC’s format', async () => {
    const input = encodeURIComponent(JSON.stringify({ 0: { fullname: 'Ada Lovelace' }, 1: { fullname: 'Ada Lovelace' } }));
    const batch = await raw(`GET /trpc/${batchOf(2, '%2C')}?batch=1&input=${input}`);
    expect(batch.status).toBe(200);
    expect(JSON.parse(batch.body)).toHaveLength(2);
    const refused = await raw('POST /trpc/accounts.login', ['Content-Type: application/json; charset=utf-8'], '{}');
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body).error.data.error).toMatchObject({ status: 400, name: 'MissingRequiredError' });
  });
});
