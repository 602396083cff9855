/**
 * Found by an independent fuzz of the HTTP layer. A request whose chunked body is malformed
 * (`POST /login`, `Transfer-Encoding: chunked`, a chunk size `zz`) got no answer at all: the
 * connection was closed with nothing written, because a request Express had already taken was
 * only ever closed. While its answer has not begun, it is a 400 Error body, and then the close.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawExchange } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

/** Writes each of `parts` as it is (fetch only sends well-formed chunks), a moment apart, and reads the answer up to the close. */
const raw = async (...parts: string[]): Promise<string> => (await rawExchange(server.url, ...parts)).text;

const HEAD = 'POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';

function expectRefusal(answer: string): void {
  const [top = '', body = ''] = answer.split('\r\n\r\n', 2);
  expect(top).toMatch(/^HTTP\/1\.1 400 /);
  expect(top).toMatch(/^content-type: application\/json/im);
  expect(top).toMatch(/^connection: close/im);
  const id = /^x-request-id: *(.*)$/im.exec(top)?.[1];
  expect(JSON.parse(body)).toEqual({ status: 400, name: 'BadRequestError', message: 'Malformed HTTP request', details: { reqId: id } });
}

describe('a malformed chunked body', () => {
  it('sent with its headers is a 400 Error body before the close, not a bare close', async () => {
    expectRefusal(await raw(`${HEAD}zz\r\n{}\r\n0\r\n\r\n`));
  });

  it('sent after its headers, while the body is being read, is the same', async () => {
    expectRefusal(await raw(HEAD, '2\r\n{}\r\n', 'zz\r\n{}\r\n0\r\n\r\n'));
  });

  it('is nothing unexpected, and the server still answers', async () => {
    expect(server.logs.filter((line) => JSON.parse(line).level >= 50)).toEqual([]);
    expect(await (await fetch(`${server.url}/health`)).json()).toEqual({ status: 'ok', database: 'ok' });
  });
});
