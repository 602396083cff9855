import { PassThrough, type Readable } from 'node:stream';

/** A PATCH whose body sends nothing for this long is ended, keeping what arrived. */
const IDLE_BODY_MS = 30_000;

/**
 * The stream a store receives a PATCH's body from: ends (rather than fails) when the client goes,
 * or sends nothing for `IDLE_BODY_MS` (a half-open connection must not hold the upload for the
 * hour uploads are given), so what arrived is kept.
 */
export function keptOnCut(body: Readable): { stream: PassThrough; cut: () => boolean } {
  const stream = new PassThrough();
  let complete = false;
  let cut = false;
  let idle: NodeJS.Timeout | undefined;
  const quiet = () => {
    clearTimeout(idle);
    idle = setTimeout(() => body.destroy(), IDLE_BODY_MS);
  };
  quiet();
  body.on('data', quiet);
  body.pipe(stream, { end: false });
  body.once('end', () => {
    complete = true;
    clearTimeout(idle);
    stream.end();
  });
  body.once('close', () => {
    clearTimeout(idle);
    if (complete) return;
    cut = true;
    body.unpipe(stream);
    stream.end();
  });
  body.once('error', () => undefined);
  // Gone already while the request waited (its lease, its place): its 'close' came and went.
  if (body.destroyed && !body.readableEnded) {
    clearTimeout(idle);
    cut = true;
    body.unpipe(stream);
    stream.end();
  }
  return { stream, cut: () => cut };
}

/**
 * Whether a body of unstated length (sent in chunks) brings any byte: read up to its first byte
 * (then left paused: the answer ends the connection, `endUnreadBodies`) or its end. A body its
 * client cut, or that was gone before it was read, brings none; one silent for `IDLE_BODY_MS` is
 * ended as `keptOnCut` ends it, and brings none either.
 */
export function bringsAnyByte(body: Readable): Promise<boolean> {
  if (body.readableEnded || body.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    const idle = setTimeout(() => body.destroy(), IDLE_BODY_MS);
    const settle = (answer: boolean) => {
      clearTimeout(idle);
      body.off('data', onData).off('end', onEnd).off('close', onEnd);
      resolve(answer);
    };
    const onData = (chunk: Buffer) => {
      if (chunk.length === 0) return;
      body.pause();
      settle(true);
    };
    const onEnd = () => settle(false);
    // A client that goes is an 'aborted' error, then 'close': no byte came, which is no failure.
    body.on('data', onData).on('end', onEnd).on('close', onEnd).once('error', () => undefined);
  });
}
