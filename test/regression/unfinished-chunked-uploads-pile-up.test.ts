/**
 * Found by an attack review of issue 12: a person could open any number of chunked uploads and
 * never finish them (each `PUT /attachment/chunk` with a new `clientUploadId`), each holding up
 * to its field's size on disk for a day. At most 20 may be unfinished at once; a chunk of one
 * already open is always taken.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdfBytes, SUBMISSION, venueWithAuthor } from '../attachments/helpers.ts';
import { sendMultipart, type Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let author: Client;

beforeAll(async () => {
  server = await startServer({ UPLOAD_HUMAN_VERIFICATION_AFTER: '0' });
  author = (await venueWithAuthor(server)).author;
});
afterAll(() => server.close());

const firstChunk = (clientUploadId: string) =>
  sendMultipart(author, 'PUT', '/attachment/chunk', { invitationId: SUBMISSION, name: 'pdf', clientUploadId, chunkIndex: 0, totalChunks: 2 }, { filename: 'p.pdf', data: pdfBytes(1000) });

describe('unfinished chunked uploads', () => {
  it('are at most 20 per person; the 21st is a 429, and chunks of open ones are still taken', async () => {
    for (let i = 0; i < 20; i += 1) expect((await firstChunk(`open-${i}`)).status).toBe(200);
    const refused = await firstChunk('one-too-many');
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ status: 429, name: 'TooManyError' });
    expect((await firstChunk('open-3')).status).toBe(200);
  });
});
