/**
 * `bringsAnyByte`, which reads a chunked body sent to a complete tus upload up to its first
 * byte, on real requests: a client that goes (before or while it is read) is no failure, and a
 * request whose body is read stops at its first byte.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { bringsAnyByte } from '../../server/attachments/kept-on-cut.ts';

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/**
 * A server that hands its first request to `bringsAnyByte` (after `wait`, when given) and answers
 * what it settles to; a raw connection to it that has sent a chunked request's head; and the
 * settling, once the request has reached the server.
 */
async function oneRequest(wait?: (req: IncomingMessage) => Promise<void>) {
  // In an object: a promise resolved with a promise would wait for that one.
  let reached: (outcome: { settled: Promise<boolean> }) => void = () => undefined;
  const outcome = new Promise<{ settled: Promise<boolean> }>((resolve) => (reached = resolve));
  server = createServer((req, res) => {
    const settled = (async () => {
      await wait?.(req);
      return bringsAnyByte(req);
    })();
    settled.then(
      (brings) => res.end(String(brings)),
      () => res.end('rejected'),
    );
    reached({ settled });
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
  await new Promise<void>((resolve) => socket.on('connect', resolve));
  socket.on('error', () => undefined);
  socket.write('PATCH /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n');
  return { socket, settled: (await outcome).settled };
}

describe('bringsAnyByte', () => {
  it('is false for an empty body', async () => {
    const { socket, settled } = await oneRequest();
    socket.write('0\r\n\r\n');
    await expect(settled).resolves.toBe(false);
    socket.destroy();
  });

  it('is true at the first byte, and does not wait for the rest', async () => {
    const { socket, settled } = await oneRequest();
    socket.write('1\r\nx\r\n');
    await expect(settled).resolves.toBe(true);
    socket.destroy();
  });

  it('is false, not a failure, for a client that goes before its first chunk', async () => {
    const { socket, settled } = await oneRequest();
    socket.destroy();
    await expect(settled).resolves.toBe(false);
  });

  it('ends a body that sends nothing for 30 s, as an ordinary PATCH is ended, and is false', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const { socket, settled } = await oneRequest();
      await vi.advanceTimersByTimeAsync(30_000);
      await expect(settled).resolves.toBe(false);
      socket.destroy();
    } finally {
      vi.useRealTimers();
    }
  });

  it('is false at once for a request its client left before it was read', async () => {
    let gone: () => void = () => undefined;
    const left = new Promise<void>((resolve) => (gone = resolve));
    const { socket, settled } = await oneRequest(async (req) => {
      req.once('close', () => gone());
      await left;
    });
    socket.destroy();
    await expect(settled).resolves.toBe(false);
  });
});
