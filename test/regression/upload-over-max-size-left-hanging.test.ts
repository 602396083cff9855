/**
 * Found by an independent review of the venue and attachments work. An upload over its field's
 * `maxSize`, with its fields sent first, never got an answer: the store destroyed busboy's own
 * stream and stalled the parser. It now reads a pass-through and busboy is drained: the answer is
 * 413 at once, for whole and chunked uploads, and nothing is left on disk.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdfBytes, temporaryFiles, VENUE, venueWithAuthor } from '../attachments/helpers.ts';
import { sendMultipart, type Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let author: Client;
let root: Client;
beforeAll(async () => {
  server = await startServer();
  ({ root, author } = await venueWithAuthor(server));
  await root.post('/invitations', {
    id: `${VENUE}/-/Half`,
    domain: VENUE,
    form: { doc: { order: 1, value: { param: { type: 'file', extensions: ['pdf'], maxSize: 0.5 } } } },
  });
});
afterAll(async () => {
  await server.close();
});

describe('an upload over maxSize with the fields sent first', () => {
  it('is answered 413 at once, not left hanging, and leaves nothing behind', async () => {
    const res = await sendMultipart(author, 'PUT', '/attachment', { name: 'doc', invitationId: `${VENUE}/-/Half` }, { filename: 'big.pdf', data: pdfBytes(3 * 1024 * 1024) }, {});
    expect(res.status).toBe(413);
    expect(await temporaryFiles(server.dataDir)).toEqual([]);
    const chunk = await sendMultipart(
      author,
      'PUT',
      '/attachment/chunk',
      { name: 'doc', invitationId: `${VENUE}/-/Half`, clientUploadId: 'big-chunk', chunkIndex: 0, totalChunks: 2 },
      { filename: 'big.pdf', data: pdfBytes(2 * 1024 * 1024) },
    );
    expect(chunk.status).toBe(413);
  }, 20_000);
});
