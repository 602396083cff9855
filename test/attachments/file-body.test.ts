/**
 * A stored file's body on the local disk (`FileBody`): sent through two reused buffers, it gives
 * exactly the range's bytes, never reads into a buffer whose bytes the sink has not called back
 * for, and on any failure closes its file and cuts the sink off; read as a stream (a zip), each
 * piece is its own.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { open, writeFile, type FileHandle } from 'node:fs/promises';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import path from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { FileBody } from '../../server/attachments/store/file-body.ts';
import { tempDir } from '../helpers/server.ts';

/**
 * A sink that looks at a chunk only when it calls back for it, `delayMs` after the write: the
 * last moment the writer must leave the chunk's bytes alone. It keeps copies of what it saw.
 */
function lateSink(delayMs: number, failAfter = Infinity): Writable & { received: () => Buffer } {
  const seen: Buffer[] = [];
  const sink = new Writable({
    highWaterMark: 1,
    write(chunk: Buffer, _encoding, done) {
      setTimeout(() => {
        if (seen.length >= failAfter) return done(new Error('the client went away'));
        seen.push(Buffer.from(chunk));
        done();
      }, delayMs);
    },
  });
  // A response's socket has its listener; the failure is what `sendTo` rejects with.
  sink.on('error', () => undefined);
  return Object.assign(sink, { received: () => Buffer.concat(seen) });
}

async function fileOf(bytes: Buffer): Promise<string> {
  const file = path.join(await tempDir(), 'stored.pdf');
  await writeFile(file, bytes);
  return file;
}

/** A download answered by a `fileServer`: its file handle, and how its send ended ('sent', or the error). */
interface Send {
  handle: FileHandle;
  outcome: unknown;
  settled: Promise<unknown>;
}

/**
 * A server on 127.0.0.1 answering every request with the file through `sendTo`, once it has read
 * the request's body to its end (as a body parser does; the request then closes, the answer not);
 * `meddle` may wrap the handle's reads.
 */
async function fileServer(file: string, size: number, meddle: (handle: FileHandle, res: ServerResponse) => void = () => undefined) {
  const sends: Send[] = [];
  const server = createServer((req, res) => {
    req.resume();
    void Promise.all([once(req, 'end'), open(file, 'r')]).then(([, handle]) => {
      meddle(handle, res);
      res.writeHead(200, { 'content-length': size });
      const send: Send = { handle, outcome: 'pending', settled: Promise.resolve() };
      send.settled = new FileBody(handle, 0, Infinity).sendTo(res).then(
        () => (send.outcome = 'sent'),
        (error: unknown) => (send.outcome = error),
      );
      sends.push(send);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return { sends, port, url: `http://127.0.0.1:${port}/`, close: () => (server.closeAllConnections(), server.close()) };
}

describe('FileBody', () => {
  it('sends the whole file, or a range of it, byte for byte, to a sink that calls back late', async () => {
    const bytes = randomBytes(5 * 65_536 + 1_234);
    const file = await fileOf(bytes);
    const cases: Array<[number, number, Buffer]> = [
      [0, Infinity, bytes],
      [10, 200_000, bytes.subarray(10, 200_000)],
      [65_536, 65_537, bytes.subarray(65_536, 65_537)],
      [bytes.length - 1, bytes.length, bytes.subarray(bytes.length - 1)],
    ];
    for (const [start, stop, expected] of cases) {
      const handle = await open(file, 'r');
      const sink = lateSink(2);
      await new FileBody(handle, start, stop).sendTo(sink);
      expect(sink.received().equals(expected)).toBe(true);
      expect(sink.writableFinished).toBe(true);
      expect(handle.fd).toBe(-1);
    }
  });

  it('sends taking turns at the kept buffers, several at once and one after the other, each get their own bytes', async () => {
    const files = await Promise.all([1, 2, 3, 4, 5].map(async (n) => {
      const bytes = randomBytes(n * 100_000 + n);
      return { bytes, file: await fileOf(bytes) };
    }));
    for (let round = 0; round < 2; round += 1) {
      const sinks = files.map(() => lateSink(1));
      await Promise.all(files.map(async ({ file }, i) => new FileBody(await open(file, 'r'), 0, Infinity).sendTo(sinks[i]!)));
      sinks.forEach((sink, i) => expect(sink.received().equals(files[i]!.bytes)).toBe(true));
    }
  });

  it('an empty file is an empty body, ended', async () => {
    const handle = await open(await fileOf(Buffer.alloc(0)), 'r');
    const sink = lateSink(0);
    await new FileBody(handle, 0, Infinity).sendTo(sink);
    expect(sink.received().length).toBe(0);
    expect(sink.writableFinished).toBe(true);
  });

  it('a sink that fails mid-way stops the reading, closes the file and is destroyed', async () => {
    const handle = await open(await fileOf(randomBytes(10 * 65_536)), 'r');
    const sink = lateSink(1, 3);
    await expect(new FileBody(handle, 0, Infinity).sendTo(sink)).rejects.toThrow('the client went away');
    expect(sink.destroyed).toBe(true);
    expect(handle.fd).toBe(-1);
  });

  it('a file that ends inside the range asked for is an error, and the sink is cut off', async () => {
    const handle = await open(await fileOf(randomBytes(100_000)), 'r');
    const sink = lateSink(0);
    await expect(new FileBody(handle, 0, 150_000).sendTo(sink)).rejects.toThrow('ended inside the range');
    expect(sink.destroyed).toBe(true);
    expect(sink.writableFinished).toBe(false);
    expect(handle.fd).toBe(-1);
  });

  it('read as a stream, every piece is its own memory, and the range is exact', async () => {
    const bytes = randomBytes(3 * 65_536 + 7);
    const handle = await open(await fileOf(bytes), 'r');
    const pieces: Buffer[] = [];
    for await (const piece of new FileBody(handle, 5, bytes.length - 5)) pieces.push(piece as Buffer);
    expect(Buffer.concat(pieces).equals(bytes.subarray(5, bytes.length - 5))).toBe(true);
    expect(new Set(pieces.map((p) => p.buffer)).size).toBe(pieces.length);
    expect(handle.fd).toBe(-1);
  });

  it('over a real socket: a whole download is the file, and a client leaving mid-way ends the send and closes the file', async () => {
    const bytes = randomBytes(8 * 1024 * 1024 + 3);
    const served = await fileServer(await fileOf(bytes), bytes.length);
    try {
      const [whole] = (await once(request(served.url).end(), 'response')) as [IncomingMessage];
      const received: Buffer[] = [];
      for await (const piece of whole) received.push(piece as Buffer);
      expect(Buffer.concat(received).equals(bytes)).toBe(true);
      expect(await served.sends[0]!.settled).toBe('sent');

      const leaving = request(served.url).end();
      leaving.on('error', () => undefined);
      const [partial] = (await once(leaving, 'response')) as [IncomingMessage];
      let taken = 0;
      for await (const piece of partial) {
        taken += (piece as Buffer).length;
        if (taken > 100_000) break;
      }
      leaving.destroy();
      expect(await served.sends[1]!.settled).toBeInstanceOf(Error);
      expect(served.sends.map((send) => send.handle.fd)).toEqual([-1, -1]);
    } finally {
      served.close();
    }
  });

  it('ends, and closes the file, when the socket is destroyed just as a read completes (Node drops that write\'s callback)', async () => {
    const bytes = randomBytes(4 * 1024 * 1024);
    const served = await fileServer(await fileOf(bytes), bytes.length, (handle, res) => {
      const read = handle.read.bind(handle) as (...args: unknown[]) => Promise<unknown>;
      let reads = 0;
      // The connection drops in the same turn as the fourth read completes, before its write.
      (handle as unknown as { read: typeof read }).read = async (...args) => {
        const result = await read(...args);
        if ((reads += 1) === 4) res.socket?.destroy();
        return result;
      };
    });
    try {
      const req = request(`http://127.0.0.1:${served.port}/`, (res) => res.on('data', () => undefined).on('error', () => undefined));
      req.on('error', () => undefined).end();
      await expect.poll(() => served.sends[0]?.outcome, { timeout: 5_000 }).toBeInstanceOf(Error);
      expect(served.sends[0]!.handle.fd).toBe(-1);
    } finally {
      served.close();
    }
  });

  it('ends, and closes the file, for an answer queued behind another on a connection that drops', async () => {
    // Larger than the kernel's buffers on a loopback connection hold, so the first answer cannot finish unread.
    const bytes = randomBytes(32 * 1024 * 1024);
    const served = await fileServer(await fileOf(bytes), bytes.length);
    try {
      // Two requests at once on one connection (pipelined), read by nobody: the second answer waits for the first.
      const socket = connect(served.port, '127.0.0.1');
      socket.on('error', () => undefined);
      await once(socket, 'connect');
      socket.pause();
      socket.write('GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n');
      await expect.poll(() => served.sends.length, { timeout: 5_000 }).toBe(2);
      socket.destroy();
      await expect.poll(() => served.sends.map((send) => send.outcome instanceof Error), { timeout: 5_000 }).toEqual([true, true]);
      expect(served.sends.map((send) => send.handle.fd)).toEqual([-1, -1]);
    } finally {
      served.close();
    }
  });

  it("sends the whole file after the request's body was read (its request closes before the answer is done)", async () => {
    const bytes = randomBytes(8 * 1024 * 1024);
    const served = await fileServer(await fileOf(bytes), bytes.length);
    try {
      for (const body of ['{}', '']) {
        const req = request(`http://127.0.0.1:${served.port}/`, { method: 'GET', headers: { 'content-type': 'application/json', 'content-length': String(body.length) } });
        const [res] = (await once(req.end(body), 'response')) as [IncomingMessage];
        const received: Buffer[] = [];
        for await (const piece of res) received.push(piece as Buffer);
        expect(Buffer.concat(received).equals(bytes)).toBe(true);
      }
      await expect.poll(() => served.sends.map((send) => send.outcome), { timeout: 5_000 }).toEqual(['sent', 'sent']);
    } finally {
      served.close();
    }
  });
});
