/**
 * Found by an attack review of issue 12: `GET /health` announcing `Content-Length: 1000000000`
 * and sending one byte every few seconds got its 200 at once, but the connection stayed open:
 * the 60 s body deadline stops once an answer is sent, which left the hour uploads are given.
 * An answer sent before its body was read now ends the connection.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

describe('a request whose body is still coming when it is answered', () => {
  it('gets its answer, and then the server ends the connection (without the fix this test times out)', async () => {
    const { port } = new URL(server.url);
    const socket = connect(Number(port), '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
    });
    const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000000\r\n\r\nx');
    // Keep trickling until the server lets go (bounded by the test's timeout, and by the count).
    const trickle = setInterval(() => {
      if (!socket.destroyed) socket.write('x');
    }, 200);
    await ended;
    clearInterval(trickle);
    expect(received).toMatch(/^HTTP\/1\.1 200 /);
  });
});
