/**
 * `requestLogger`: one line per request, as pino-http wrote them (issue 16 replaced it with a
 * leaner one): completed, aborted, or errored with the error, and a logger bound to the request.
 */
import { EventEmitter } from 'node:events';
import { IncomingMessage } from 'node:http';
import { Writable } from 'node:stream';
import type { Logger } from 'pino';
import { describe, expect, it } from 'vitest';
import { createLogger, requestLogger } from '../../server/logger.ts';

function harness() {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const log = requestLogger(createLogger('info', sink), () => 'req-1');
  const request = (url: string) => {
    // A request as the server makes them: its `log` is a getter of their prototype.
    const req = Object.create(IncomingMessage.prototype, { method: { value: 'GET' }, url: { value: url }, readableAborted: { value: false } }) as { method: string; url: string; readableAborted: boolean; id?: unknown; log?: Logger };
    const res = Object.assign(new EventEmitter(), { statusCode: 200, writableEnded: false, err: undefined as unknown });
    let nexted = false;
    log(req, res, () => (nexted = true));
    expect(nexted).toBe(true);
    return { req, res };
  };
  const flushed = () => new Promise((resolve) => setImmediate(resolve));
  return { lines, request, flushed };
}

describe('requestLogger', () => {
  it('writes one line when the answer is finished, with the id, the redacted URL and the status', async () => {
    const { lines, request, flushed } = harness();
    const { req, res } = request('/oidc/authorize?client_id=app&code_verifier=secret-value');
    expect(req.id).toBe('req-1');
    res.writableEnded = true;
    res.emit('finish');
    res.emit('close');
    await flushed();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 30,
      req: { id: 'req-1', method: 'GET', url: '/oidc/authorize?client_id=app&code_verifier=%5Bredacted%5D' },
      res: { statusCode: 200 },
      msg: 'request completed',
    });
    expect(Object.keys(lines[0] ?? {})).toEqual(['level', 'time', 'req', 'res', 'responseTime', 'msg']);
    expect(JSON.stringify(lines)).not.toContain('secret-value');
  });

  it('logs the URL the client sent, not what a router mounted under a prefix left of it', async () => {
    const { lines, request, flushed } = harness();
    // What Express's `app.use('/trpc', …)` leaves while the tRPC handler runs: `url` without the
    // prefix, `originalUrl` as sent.
    const { req, res } = request('/accounts.tildeUsername?input=%7B%7D');
    Object.defineProperty(req, 'originalUrl', { value: '/trpc/accounts.tildeUsername?input=%7B%7D' });
    res.writableEnded = true;
    res.emit('finish');
    res.emit('close');
    await flushed();
    expect(lines[0]).toMatchObject({ req: { url: '/trpc/accounts.tildeUsername?input=%5Bredacted%5D' } });
  });

  it('says aborted when the connection closed first, and errored (with the error) for a 5xx', async () => {
    const { lines, request, flushed } = harness();
    request('/a').res.emit('close');
    const failed = request('/b');
    failed.res.statusCode = 500;
    failed.res.writableEnded = true;
    failed.res.emit('finish');
    await flushed();
    expect(lines.map((l) => l.msg)).toEqual(['request aborted', 'request errored']);
    expect(lines[1]).toMatchObject({ res: { statusCode: 500 }, err: { type: 'Error', message: 'failed with status code 500' } });
  });

  it('gives the request a logger bound to it', async () => {
    const { lines, request, flushed } = harness();
    const { req } = request('/c');
    req.log?.error({ err: new Error("bad 'quoted' value") }, 'something failed');
    await flushed();
    expect(lines[0]).toMatchObject({ level: 50, req: { id: 'req-1', url: '/c' }, msg: 'something failed', err: { message: "bad '[redacted]' value" } });
  });
});
