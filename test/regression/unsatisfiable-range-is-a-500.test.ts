/**
 * Found by an independent review of the venue and attachments work. Reading a file with a `Range`
 * past its end was a 500. It is a 416 with the spec's Error body.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdfBytes, submitPaper, venueWithAuthor } from '../attachments/helpers.ts';
import { cookieHeader } from '../helpers/cookies.ts';
import type { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let author: Client;
let authorId: string;
beforeAll(async () => {
  server = await startServer();
  ({ author, authorId } = await venueWithAuthor(server));
});
afterAll(async () => {
  await server.close();
});

describe('reading back', () => {
  it('an unsatisfiable range is a 416 Error body, not a 500', async () => {
    const data = pdfBytes(1000);
    const { note } = await submitPaper(author, authorId, data);
    const res = await fetch(`${server.url}/pdf?id=${note.body.id}`, { headers: { cookie: cookieHeader(author), range: 'bytes=999999-' } });
    expect(res.status).toBe(416);
    expect(await res.json()).toMatchObject({ status: 416, name: 'RangeNotSatisfiableError' });
  });
});
