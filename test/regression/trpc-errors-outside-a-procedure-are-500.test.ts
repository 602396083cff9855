/**
 * Found by an independent review of the accounts work. An error tRPC raises before any procedure
 * runs (a procedure that does not exist, input that is not JSON) reached the error formatter as
 * an unexpected error and was answered 500. They are the caller's mistakes: 404 NotFoundError and
 * 400 BadRequestError, in the spec's Error body.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

describe('tRPC errors raised outside a procedure', () => {
  it('an unknown procedure is a 404 NotFoundError, not a 500', async () => {
    const res = await new Client(server.url).get('/trpc/accounts.nope');
    expect(res.status).toBe(404);
    expect(res.body.error.data.error).toMatchObject({ status: 404, name: 'NotFoundError' });
  });

  it('malformed JSON input is a 400, not a 500', async () => {
    const res = await new Client(server.url).get('/trpc/accounts.tildeUsername?input=%7Bbroken');
    expect(res.status).toBe(400);
    expect(res.body.error.data.error).toMatchObject({ status: 400, name: 'BadRequestError' });
  });
});
