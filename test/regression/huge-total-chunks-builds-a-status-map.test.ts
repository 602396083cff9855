/**
 * Found by an independent review of the venue and attachments work. `totalChunks` was unbounded,
 * and the status map of an upload lists every chunk: a first chunk announcing five million built a
 * map that size. It is bounded (10 000), and a larger count is a 400 naming `totalChunks`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdfBytes, SUBMISSION, venueWithAuthor } from '../attachments/helpers.ts';
import { sendMultipart, type Client } from '../helpers/http.ts';
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

describe('chunk counts', () => {
  it('a totalChunks in the millions is refused before any status map is built', async () => {
    const res = await sendMultipart(
      author,
      'PUT',
      '/attachment/chunk',
      { name: 'pdf', invitationId: SUBMISSION, clientUploadId: 'huge-count', chunkIndex: 0, totalChunks: 5_000_000 },
      { filename: 'p.pdf', data: pdfBytes(100) },
    );
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual({ path: 'totalChunks', reqId: expect.any(String) });
  });
});
