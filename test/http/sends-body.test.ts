import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { sendsBody } from '../../server/http/send-error.ts';

/** A request as Node's parser leaves it, with only `headers` set. */
function request(headers: Record<string, string>): IncomingMessage {
  const req = new IncomingMessage(new Socket());
  req.headers = headers;
  return req;
}

describe('sendsBody, the one reading of Transfer-Encoding and Content-Length', () => {
  it.each([
    [{}, false],
    [{ 'content-length': '0' }, false],
    [{ 'content-length': '12' }, true],
    [{ 'transfer-encoding': 'chunked' }, 'chunked'],
    // With both, the chunks decide the length (RFC 9112, section 6.3).
    [{ 'transfer-encoding': 'chunked', 'content-length': '0' }, 'chunked'],
  ] as const)('%j sends %s', (headers, expected) => {
    expect(sendsBody(request(headers))).toBe(expected);
  });
});
