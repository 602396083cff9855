/**
 * A client that went away in the middle of a multipart body made the server destroy a stream
 * nobody listened to (yet, or any more): an uncaught 'error', which ends the process. Found
 * when `npm run cli -- upload` was interrupted with Ctrl-C.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdfBytes, SUBMISSION, temporaryFiles, venueWithAuthor } from '../attachments/helpers.ts';
import { cookieHeader } from '../helpers/cookies.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitUntil } from '../helpers/wait.ts';

let server: TestServer;
let cookie: string;

beforeAll(async () => {
  server = await startServer();
  const { author } = await venueWithAuthor(server);
  cookie = cookieHeader(author);
});
afterAll(() => server.close());

/** Sends a multipart body up to the start of the part after the file (or into the file), then closes the connection. */
function sendAndLeave(stopAt: 'after-file' | 'inside-file', waitMs: number): Promise<void> {
  const boundary = 'cut-here-boundary';
  const data = pdfBytes(256 * 1024);
  const field = (name: string, value: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const head = Buffer.from(
    field('name', 'pdf') +
      field('invitationId', SUBMISSION) +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.pdf"\r\nContent-Type: application/pdf\r\n\r\n`,
  );
  const body = stopAt === 'after-file' ? Buffer.concat([head, data, Buffer.from(`\r\n--${boundary}\r\n`)]) : Buffer.concat([head, data.subarray(0, 1000)]);
  const { port } = new URL(server.url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), '127.0.0.1', () => {
      socket.write(
        `PUT /attachment HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${cookie}\r\n` +
          `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${body.length + 1000}\r\n\r\n`,
      );
      socket.write(body);
      setTimeout(() => {
        socket.destroy();
        resolve();
      }, waitMs);
    });
  });
}

describe('an upload whose client goes away before the end of the body', () => {
  it('leaves the server running and answering, and no temporary file, wherever the client left', async () => {
    // Leaving at once is while the server looks up the field's size limit, before it reads the file.
    for (const waitMs of [0, 1, 5, 300]) {
      await Promise.all([sendAndLeave('after-file', waitMs), sendAndLeave('inside-file', waitMs)]);
    }
    await waitUntil(async () => (await temporaryFiles(server.dataDir)).length === 0, 'removing the temporary files');
    const health = await fetch(`${server.url}/health`);
    expect(await health.json()).toEqual({ status: 'ok', database: 'ok' });
    // And nothing of the cut uploads is left behind.
    expect(await temporaryFiles(server.dataDir)).toEqual([]);
  });
});
