/**
 * Found by an independent fuzz of the HTTP layer. `TRACE /trpc/accounts.profiles` (or `TRACE
 * /trpc`) was a 500: tRPC's adapter builds a fetch `Request`, which refuses that method. tRPC
 * has no meaning for any method but GET and POST: each other one is a 404 Error body, as a
 * method a REST path does not have.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawExchange } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

/** Sends `head` as written (fetch refuses `TRACE` itself) and reads the answer up to the close. */
async function raw(head: string): Promise<{ status: number; type: string; body: string }> {
  const answer = await rawExchange(server.url, `${head}\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
  return { status: answer.status, type: answer.header('content-type') ?? '', body: answer.body };
}

describe('a method tRPC does not take', () => {
  it.each(['TRACE /trpc/accounts.profiles', 'TRACE /trpc', 'DELETE /trpc/accounts.login', 'PUT /trpc/accounts.login', 'PROPFIND /trpc/accounts.login', 'OPTIONS /trpc/accounts.login'])(
    '%s is a 404 Error body, not a 500',
    async (line) => {
      const res = await raw(`${line} HTTP/1.1`);
      expect(res.status).toBe(404);
      expect(res.type).toMatch(/^application\/json/);
      expect(JSON.parse(res.body)).toEqual({ status: 404, name: 'NotFoundError', message: `Route not found: ${line}`, details: { reqId: expect.any(String) } });
    },
  );

  it('as a method a REST path does not have', async () => {
    const res = await raw('TRACE /login HTTP/1.1');
    expect(res.status).toBe(404);
    expect(JSON.parse(res.body)).toMatchObject({ status: 404, name: 'NotFoundError' });
  });

  it('GET and POST still reach tRPC', async () => {
    const query = await fetch(`${server.url}/trpc/accounts.nope`);
    expect(query.status).toBe(404);
    expect(((await query.json()) as { error: { data: { error: unknown } } }).error.data.error).toMatchObject({ status: 404, name: 'NotFoundError' });
  });
});
