/**
 * A stored file's bytes on the local disk (or a range of them), read from a handle opened before
 * the answer starts. As a `Readable` it gives each piece in memory of its own, for consumers
 * that keep pieces (a zip); `sendTo` (what `sendBody` calls for an HTTP answer) writes it through
 * two reused buffers, each read into again only once the socket has taken what was written from it.
 *
 * Why: a download read as a plain stream allocates a 64 KiB buffer per piece, outside V8's heap.
 * They die as soon as they are written, but V8 counts their bytes and, every few dozen
 * megabytes, runs a full collection of the whole heap to free them: measured during four 50 MB
 * downloads at once, ten full collections a second, a quarter of the main thread
 * ([Performance](../../../docs/performance.md)). Reused buffers allocate nothing per piece.
 */
import type { FileHandle } from 'node:fs/promises';
import { Readable, type Duplex, type Writable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';

/** One read's size: as `fs.createReadStream`'s default. */
const PIECE_BYTES = 64 * 1024;
/**
 * Buffers kept for the next sends once a send is done with them (512 KiB at most: four downloads
 * at once reuse them). Without it each download's two buffers would wait, dead, for a collection
 * that reads and writes on the heap no longer bring on.
 */
const POOL_KEPT = 8;
const pool: Buffer[] = [];
const take = () => pool.pop() ?? Buffer.allocUnsafeSlow(PIECE_BYTES);
const giveBack = (buffers: Buffer[]) => {
  for (const buffer of buffers) if (pool.length < POOL_KEPT) pool.push(buffer);
};

/** The bytes `[start, stop)` of an open file (`stop` infinite: to its end), which it closes when done or destroyed. */
export class FileBody extends Readable {
  readonly #handle: FileHandle;
  #position: number;
  readonly #stop: number;

  constructor(handle: FileHandle, start: number, stop: number) {
    super({ highWaterMark: PIECE_BYTES });
    this.#handle = handle;
    this.#position = start;
    this.#stop = stop;
  }

  /** Reads the next piece into `buffer` (from its start); 0 once done. A file that ends inside a finite range is an error. */
  async #readInto(buffer: Buffer): Promise<number> {
    const length = Math.min(buffer.length, this.#stop - this.#position);
    if (length <= 0) return 0;
    const { bytesRead } = await this.#handle.read(buffer, 0, length, this.#position);
    if (bytesRead === 0 && this.#stop !== Infinity) throw new Error('The stored file ended inside the range asked for');
    this.#position += bytesRead;
    return bytesRead;
  }

  override _read(): void {
    if (this.#position >= this.#stop) {
      this.push(null);
      return;
    }
    const buffer = Buffer.allocUnsafe(Math.min(PIECE_BYTES, this.#stop - this.#position));
    this.#readInto(buffer).then(
      (read) => this.push(read === 0 ? null : buffer.subarray(0, read)),
      (error: unknown) => this.destroy(error as Error),
    );
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    this.#handle.close().then(
      () => done(error),
      () => done(error),
    );
  }

  /**
   * Writes the range to `sink` and ends it. Two buffers take turns: one is read into while the
   * other's bytes are on their way, and a buffer is read into again only once `sink` called back
   * for its last write (the bytes have left it for the socket). A slow reader therefore holds
   * this at two pieces, as backpressure would. A failed read, or a sink closed early, destroys
   * both: the client sees a body cut short, never a wrong byte.
   */
  async sendTo(sink: Writable): Promise<void> {
    const buffers = [take(), take()];
    const sent: Array<Promise<Error | null> | null> = [null, null];
    const settle = async (turn: number) => {
      const failed = await sent[turn];
      if (failed) throw failed;
    };
    const { gone, stop } = whenGone(sink);
    try {
      for (let turn = 0; ; turn ^= 1) {
        await settle(turn);
        const read = await this.#readInto(buffers[turn]!);
        if (read === 0) break;
        sent[turn] = Promise.race([written(sink, buffers[turn]!.subarray(0, read)), gone]);
      }
      await settle(0);
      await settle(1);
      sink.end();
      const failed = await Promise.race([finished(sink).then(() => null, (error: Error) => error), gone]);
      if (failed) throw failed;
      // Every write called back: nothing holds the buffers any more. After a failure a write may
      // still be queued on its way to a socket, so they are left to the collector.
      giveBack(buffers);
    } catch (error) {
      // Without an error: the sink's own failure it has reported already, and a failed read is
      // the caller's to handle, not an `error` event on a sink that may have no listener for it.
      sink.destroy();
      throw error;
    } finally {
      stop();
      this.destroy();
    }
  }
}

/**
 * `chunk` written to `sink`: settled once `sink` calls back (the bytes have left the chunk), with
 * the error if it failed or was closed. Never rejected, as nobody awaits a write while the next
 * piece is read.
 */
function written(sink: Writable, chunk: Buffer): Promise<Error | null> {
  return new Promise((resolve) => {
    sink.write(chunk, (error) => resolve(error ?? null));
  });
}

/**
 * Settled once `sink` can take no more: it closed, or the connection it answers on did; with an
 * error unless it finished first. A write's callback alone cannot be waited for: Node's HTTP
 * answer drops the callback of a write made after its socket was destroyed and before it closes
 * itself (in the same turn), and an answer queued behind another on a connection that drops
 * never closes itself at all; its request's socket does. (Not the request's own `close`: a
 * request emits it as soon as its body has been read, while the answer may still be going.)
 */
function whenGone(sink: Writable): { gone: Promise<Error | null>; stop: () => void } {
  const answer = sink as Writable & { req?: { socket?: Duplex | null }; socket?: Duplex | null };
  const connection = answer.req?.socket ?? answer.socket ?? undefined;
  let stop = () => undefined as void;
  const gone = new Promise<Error | null>((resolve) => {
    const closed = () => resolve(sink.writableFinished ? null : new Error('The client went away'));
    if (sink.destroyed || connection?.destroyed) return closed();
    sink.once('close', closed);
    connection?.once('close', closed);
    stop = () => {
      sink.off('close', closed);
      connection?.off('close', closed);
    };
  });
  return { gone, stop };
}

/** Writes a stored file's body to an HTTP answer and ends it: a local file through reused buffers, any other stream piped. */
export function sendBody(body: Readable, sink: Writable): Promise<void> {
  return body instanceof FileBody ? body.sendTo(sink) : pipeline(body, sink);
}
