/**
 * The failure: a multipart upload sent without a length (`Transfer-Encoding: chunked`) had no
 * bound on its bytes outside the file's part: a review streamed 444 MB before the first boundary,
 * and 272 MB after the closing one, into one request the server kept reading for up to the hour
 * a request may take. Now the body as a whole is refused with 413 past the largest file and its
 * parts' overhead (64 KiB), however it is sent, and nothing of it is kept.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorBody } from '../../shared/errors.ts';
import { cookieHeader } from '../helpers/cookies.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { temporaryFiles, venueWithAuthor } from '../attachments/helpers.ts';

let server: TestServer;
let cookie: string;
beforeAll(async () => {
  server = await startServer({ MAX_UPLOAD_MB: '1', UPLOAD_HUMAN_VERIFICATION_AFTER: '0' });
  const { author } = await venueWithAuthor(server);
  cookie = cookieHeader(author.jar);
});
afterAll(async () => {
  await server.close();
});

/** A chunked `PUT /attachment` whose body is `head`, then `filler` repeated until the server answers (or `limit` bytes). */
function chunkedUpload(head: string, filler: Buffer, limit: number): Promise<{ status: number; body: unknown; sent: number }> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const req = request({ host: hostname, port, method: 'PUT', path: '/attachment', headers: { cookie, 'content-type': 'multipart/form-data; boundary=XyZb', 'transfer-encoding': 'chunked' } }, (res) => {
      answered = true;
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), sent }));
    });
    req.on('error', (error) => (answered ? undefined : reject(error)));
    req.write(head);
    const more = () => {
      while (!answered && sent < limit) {
        sent += filler.length;
        if (!req.write(filler)) return void req.once('drain', more);
      }
      if (!answered) req.end();
    };
    more();
  });
}

describe('a multipart upload sent without a length', () => {
  it('past the largest file and its overhead, before the first boundary or after the last: 413, and nothing kept', async () => {
    const before = await temporaryFiles(server.dataDir);
    const preamble = await chunkedUpload('', Buffer.from('\r\n--XyZqqqqqqqqqqqqqqqqqqq'.repeat(2048)), 64 * 1024 * 1024);
    expect(preamble.status).toBe(413);
    expect(ErrorBody.safeParse(preamble.body).success).toBe(true);
    expect(preamble.sent).toBeLessThan(16 * 1024 * 1024);

    const part = '--XyZb\r\nContent-Disposition: form-data; name="invitationId"\r\n\r\nConf.org/2027/-/Submission\r\n--XyZb\r\nContent-Disposition: form-data; name="name"\r\n\r\npdf\r\n--XyZb\r\nContent-Disposition: form-data; name="file"; filename="p.pdf"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.4 small\r\n--XyZb--\r\n';
    const epilogue = await chunkedUpload(part, Buffer.alloc(64 * 1024, 0x61), 64 * 1024 * 1024);
    expect(epilogue.status).toBe(413);
    expect(epilogue.sent).toBeLessThan(16 * 1024 * 1024);
    expect(await temporaryFiles(server.dataDir)).toEqual(before);
  });
});
