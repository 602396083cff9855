/**
 * Found by an attack review of issue 12: a person could open any number of chunked uploads and
 * never finish them (each `PUT /attachment/chunk` with a new `clientUploadId`), each holding up
 * to its field's size on disk for a day. At most 20 may be unfinished at once; a chunk of one
 * already open is always taken.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdfBytes, sendHeldChunk, SUBMISSION, venueWithAuthor } from '../attachments/helpers.ts';
import { sendMultipart, type Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitUntil } from '../helpers/wait.ts';

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

  it('a first chunk whose upload another first chunk created while its body arrived is taken at the limit', async () => {
    const other = await startServer({ UPLOAD_HUMAN_VERIFICATION_AFTER: '0' });
    try {
      const { author: person } = await venueWithAuthor(other);
      const send = (clientUploadId: string) =>
        sendMultipart(person, 'PUT', '/attachment/chunk', { invitationId: SUBMISSION, name: 'pdf', clientUploadId, chunkIndex: 0, totalChunks: 2 }, { filename: 'p.pdf', data: pdfBytes(2000) });
      for (let i = 0; i < 19; i += 1) expect((await send(`open-${i}`)).status).toBe(200);
      // The twentieth upload's first chunk, its fields in, its upload looked for (none yet) and its body held…
      let looked = false;
      const answered = (_response: unknown, query: { sql: string }) => (looked ||= /^select \* from [`"]?chunked_uploads[`"]? where [`"]?profile_id/i.test(query.sql));
      other.service.db.on('query-response', answered);
      let release!: () => void;
      const fields = { invitationId: SUBMISSION, name: 'pdf', clientUploadId: 'twentieth', chunkIndex: 0, totalChunks: 2 };
      const held = sendHeldChunk(person, fields, pdfBytes(2000), new Promise<void>((resolve) => (release = resolve)));
      await waitUntil(() => looked, 'the held chunk looking for its upload');
      other.service.db.off('query-response', answered);
      // …while the same chunk, sent again, creates the upload: the person's twentieth (its answer
      // waits for the held one, sent alongside).
      const again = send('twentieth');
      await waitUntil(async () => (await other.service.db('upload_chunks').count({ n: '*' }).first())?.n == 20, 'the upload created by the chunk sent again');
      release();
      // The held one is a chunk of that upload, not a twenty-first.
      expect(await held).toMatchObject({ status: 200, body: { 0: 'completed', 1: 'missing' } });
      expect(await again).toMatchObject({ status: 200, body: { 0: 'completed', 1: 'missing' } });
    } finally {
      await other.close();
    }
  });
});
