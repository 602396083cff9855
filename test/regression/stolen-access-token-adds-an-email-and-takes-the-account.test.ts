/**
 * Found by an attack review of issue 12: with nothing but a person's access token (a bearer
 * header), `POST /user/confirm {alternate: thief's address}` mailed the thief a code, which
 * confirmed the address on the person's account; a password reset to that address then gave
 * the thief the account for good. Adding an email takes the session itself (its refresh cookie,
 * which a browser and a client that signed in keep), never an access token alone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { readOutbox } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
let person: { id: string; email: string };

beforeAll(async () => {
  server = await startServer();
  person = await createActiveUser(server);
});
afterAll(() => server.close());

describe('adding an email', () => {
  it('is refused to an access token alone, and mails nothing', async () => {
    const { token } = await loggedIn(server, person.email);
    const thief = new Client(server.url);
    thief.bearer = token;
    const res = await thief.post('/user/confirm', { alternate: 'mallory@example.net' });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ status: 403, name: 'ForbiddenError' });
    expect((await readOutbox(server.dataDir)).filter((mail) => mail.to.includes('mallory@example.net'))).toEqual([]);
  });

  it('is done by the session that signed in (its cookies)', async () => {
    const { client } = await loggedIn(server, person.email);
    const res = await client.post('/user/confirm', { alternate: 'second@example.org' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ alternate: 'second@example.org' });
  });
});
