/**
 * Found by an independent review of the venue and attachments work. A PDF no note holds is 404 to
 * anyone but its uploader; the review found a signed-in user asking for one nobody holds did not
 * get that 404. It is a 404 NotFoundError, signed in or not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { venueWithAuthor } from '../attachments/helpers.ts';
import type { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let author: Client;
beforeAll(async () => {
  server = await startServer();
  ({ author } = await venueWithAuthor(server));
});
afterAll(async () => {
  await server.close();
});

describe('reading back', () => {
  it('a PDF nobody holds is 404 for a signed-in user too', async () => {
    const res = await author.get(`/pdf/${'e'.repeat(40)}.pdf`);
    expect(res.status).toBe(404);
    expect(res.body.name).toBe('NotFoundError');
  });
});
