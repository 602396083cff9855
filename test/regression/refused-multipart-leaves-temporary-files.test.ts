/**
 * The attack: a multipart upload that is refused early (here, a part with a malformed header
 * before the file) made the parser report the failure, and the server answered, but the parser
 * went on reading: the file part that came after was still received into a temporary file that
 * nothing ever removed. Repeated, that fills the disk of the data folder with files no sweep
 * knows about. The same held for every other early refusal followed by a file.
 *
 * The fix: the first refusal stops reading the body, and every temporary file is removed
 * before the answer is sent, on every path.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdfBytes, SUBMISSION, temporaryFiles, venueWithAuthor } from '../attachments/helpers.ts';
import { cookieHeader } from '../helpers/cookies.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let cookie: string;

beforeAll(async () => {
  server = await startServer();
  const { author } = await venueWithAuthor(server);
  cookie = cookieHeader(author);
});
afterAll(() => server.close());

const BOUNDARY = 'refused-upload-boundary';
const field = (name: string, value: string) => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
const filePart = (name: string, data: Buffer) =>
  Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"; filename="p.pdf"\r\nContent-Type: application/pdf\r\n\r\n`),
    data,
    Buffer.from('\r\n'),
  ]);
const end = `--${BOUNDARY}--\r\n`;

/** Sends the whole body over a raw socket (as a hostile client would) and reads the answer. */
function put(path: string, body: Buffer): Promise<{ status: number; body: unknown }> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => {
      socket.write(
        `PUT ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${cookie}\r\nConnection: close\r\n` +
          `Content-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${body.length}\r\n\r\n`,
      );
      // The server may answer and close before it has read everything: that is allowed.
      socket.write(body, () => undefined);
    });
    let text = '';
    socket.on('data', (data: Buffer) => (text += data.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
      if (!status) return reject(new Error(`no answer: ${JSON.stringify(text.slice(0, 200))}`));
      const json = text.slice(text.indexOf('\r\n\r\n') + 4);
      resolve({ status, body: JSON.parse(json.startsWith('{') ? json : json.slice(json.indexOf('{'), json.lastIndexOf('}') + 1)) });
    });
  });
}

const pdf = () => pdfBytes(200 * 1024);
const fields = () => field('name', 'pdf') + field('invitationId', SUBMISSION);

const refusals: Array<[string, () => Buffer]> = [
  ['a part with a malformed header', () => Buffer.concat([Buffer.from(`--${BOUNDARY}\r\nthis line has no colon\r\n\r\nx\r\n` + fields()), filePart('file', pdf()), Buffer.from(end)])],
  ['a second file part', () => Buffer.concat([Buffer.from(fields()), filePart('file', pdf()), filePart('file', pdf()), Buffer.from(end)])],
  ['a file under another name', () => Buffer.concat([Buffer.from(fields()), filePart('other', pdf()), filePart('file', pdf()), Buffer.from(end)])],
  ['a field sent twice', () => Buffer.concat([Buffer.from(fields() + field('name', 'pdf')), filePart('file', pdf()), Buffer.from(end)])],
  ['an over-long field', () => Buffer.concat([Buffer.from(fields() + field('extra', 'x'.repeat(2000))), filePart('file', pdf()), Buffer.from(end)])],
  ['too many fields', () => Buffer.concat([Buffer.from(fields() + Array.from({ length: 12 }, (_, i) => field(`f${i}`, 'v')).join('')), filePart('file', pdf()), Buffer.from(end)])],
];

describe('a refused multipart upload', () => {
  it.each(refusals)('%s: answers a 4xx Error body and leaves no temporary file', async (_name, body) => {
    for (const path of ['/attachment', '/attachment/chunk']) {
      const res = await put(path, body());
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(res.body).toMatchObject({ status: res.status, name: expect.any(String), message: expect.any(String) });
      expect(await temporaryFiles(server.dataDir)).toEqual([]);
    }
  });

  it('still accepts a good upload afterwards', async () => {
    const res = await put('/attachment', Buffer.concat([Buffer.from(fields()), filePart('file', pdf()), Buffer.from(end)]));
    expect(res).toMatchObject({ status: 200, body: { url: expect.stringMatching(/^\/pdf\/[0-9a-f]{40}\.pdf$/) } });
    expect(await temporaryFiles(server.dataDir)).toEqual([]);
  });
});
