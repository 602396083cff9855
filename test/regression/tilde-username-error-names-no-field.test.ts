/**
 * Found by an independent review of the accounts work. A name that cannot make a tilde username
 * (a digit in the last name, say) was refused with an Error body that did not say which field held
 * the bad part. `details.path` names it (`name/last`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { PASSWORD } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

describe('tilde username errors', () => {
  it('name the field that holds the bad part', async () => {
    const res = await new Client(server.url).post('/register', {
      email: 'badname@example.org',
      password: PASSWORD,
      name: { first: 'Ada', last: 'L0velace' },
      token: 'dev-ok',
    });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual({ path: 'name/last', reqId: expect.any(String) });
  });
});
