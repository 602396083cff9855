/**
 * Found by an independent fuzz of the HTTP layer. Two refusals were Node's own, with an empty
 * body: `Expect:` anything but `100-continue` (a 417), and an HTTP/1.1 request without `Host`
 * (a 400). Both are now the Error body; an HTTP/1.0 request, which needs no `Host`, is answered.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawExchange } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

/** Sends `request` as written (fetch always sends `Host`, and refuses `Expect`) and reads the answer up to the close. */
const raw = (request: string) => rawExchange(server.url, request);

function expectErrorBody(answer: { top: string; body: string }, status: number): void {
  expect(answer.top.split(' ')[1]).toBe(String(status));
  expect(answer.top).toMatch(/^content-type: application\/json/im);
  const id = /^x-request-id: *(.*)$/im.exec(answer.top)?.[1];
  expect(JSON.parse(answer.body)).toEqual({ status, name: 'BadRequestError', message: expect.any(String), details: { reqId: id } });
}

describe('refusals Node made with an empty body', () => {
  it.each(['something', '200-ok', 'continue'])('Expect: %s is a 417 Error body', async (expectation) => {
    expectErrorBody(await raw(`GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: ${expectation}\r\nConnection: close\r\n\r\n`), 417);
  });

  it('an HTTP/1.1 request without Host is a 400 Error body, and the connection is closed', async () => {
    const answer = await raw('GET /health HTTP/1.1\r\n\r\n');
    expectErrorBody(answer, 400);
    expect(answer.top).toMatch(/^connection: close/im);
  });

  it('the same on tRPC, and on a POST with its body', async () => {
    expectErrorBody(await raw('GET /trpc/accounts.tildeUsername HTTP/1.1\r\nConnection: close\r\n\r\n'), 400);
    expectErrorBody(await raw('POST /login HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}'), 400);
  });

  it('an HTTP/1.0 request needs no Host', async () => {
    const answer = await raw('GET /health HTTP/1.0\r\n\r\n');
    expect(answer.top).toMatch(/^HTTP\/1\.1 200 /);
    expect(JSON.parse(answer.body)).toEqual({ status: 'ok', database: 'ok' });
  });
});
