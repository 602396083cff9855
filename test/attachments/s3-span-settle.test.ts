/**
 * Joining a parallel tus upload's parts (`S3FileStore.settleSpan`) against a store that refuses
 * the completion: only a refusal of the parts as listed (400, `InvalidPart`) means they are gone
 * for good; a refusal of who asks (403) or a timeout is thrown as it is, and nothing is given up.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AppError } from '../../shared/errors.ts';
import { toAppError } from '../../server/errors.ts';
import { S3FileStore } from '../../server/attachments/store/s3.ts';
import { tempDir } from '../helpers/server.ts';

/** What the fake store answers to CompleteMultipartUpload next: a status and an S3 error code. */
let refusal = { status: 403, code: 'AccessDenied' };
let store: S3FileStore;
let server: Server;

beforeAll(async () => {
  vi.stubEnv('AWS_ACCESS_KEY_ID', 'test');
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'test');
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      // Every request but the completion (a HEAD for the joined object's size) finds nothing.
      const completing = req.method === 'POST' && /[?&]uploadId=/.test(req.url ?? '');
      const { status, code } = completing ? refusal : { status: 404, code: 'NoSuchKey' };
      res.writeHead(status, { 'content-type': 'application/xml' });
      res.end(req.method === 'HEAD' ? undefined : `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${code}</Message></Error>`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  store = new S3FileStore({ kind: 's3', bucket: 'files', prefix: '', endpoint, region: 'us-east-1', forcePathStyle: true }, await tempDir('s3-settle-'));
});
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  vi.unstubAllEnvs();
});

const span = { id: '6f1c1b5e-2a8e-4c61-9a55-0d1f3f3c9a11', uploadId: 'multipart-1' };
const parts = [{ part: 1, etag: '"a"', size: 5 * 1024 * 1024 }];

describe("joining a span's parts", () => {
  it('a refusal of the parts as listed (400 InvalidPart) is the parts gone: send the file again', async () => {
    refusal = { status: 400, code: 'InvalidPart' };
    const error = await store.settleSpan(span, parts).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).message).toMatch(/A part of this upload is gone/);
  });

  it('a refusal of who asks (403, or a 400 about the credentials) or a timeout is thrown as the store said it, not taken for parts that are gone', async () => {
    for (const [status, code] of [
      [403, 'AccessDenied'],
      [400, 'ExpiredToken'],
      [400, 'AuthorizationHeaderMalformed'],
      [400, 'RequestTimeout'],
    ] as const) {
      refusal = { status, code };
      const error = await store.settleSpan(span, parts).catch((e: unknown) => e);
      expect(error, code).not.toBeInstanceOf(AppError);
      expect((error as { name?: string }).name).toBe(code);
    }
  });

  it('as the caller answers it: a timeout is a 503 to retry, access denied a 500, never the parts gone', async () => {
    refusal = { status: 400, code: 'RequestTimeout' };
    const timedOut = toAppError(await store.settleSpan(span, parts).catch((e: unknown) => e), undefined);
    expect([timedOut.status, timedOut.details?.retryAfter]).toEqual([503, 5]);
    refusal = { status: 403, code: 'AccessDenied' };
    expect(toAppError(await store.settleSpan(span, parts).catch((e: unknown) => e), undefined).status).toBe(500);
  });
});
