/**
 * Found by an independent fuzz of the HTTP layer. The installed files sent from disk (Swagger
 * UI's, `/docs/swagger-ui-bundle.js`; the passkeys' browser bundle, `/webauthn/browser.js`)
 * answered a range outside the file or a failed condition with a 400 Error body that kept the
 * file's headers (its Content-Type, `Cache-Control: public, max-age=86400`, ETag, Last-Modified,
 * Content-Range): a shared cache could keep the error as the file for a day, and the real 416
 * and 412 were lost. They are a 416 (its `Content-Range` giving the file's size) and a 412, in the
 * Error body, `no-store`, without the file's headers.
 */
import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

const resolve = createRequire(import.meta.url).resolve;
const FILES = [
  ['/docs/swagger-ui-bundle.js', path.join(path.dirname(resolve('swagger-ui-dist/package.json')), 'swagger-ui-bundle.js')],
  ['/webauthn/browser.js', path.join(path.dirname(resolve('@simplewebauthn/browser')), '..', 'dist/bundle/index.umd.min.js')],
] as const;

async function expectRefusal(res: Response, status: number): Promise<void> {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.headers.get('cache-control')).toBe('no-store');
  for (const header of ['etag', 'last-modified', 'accept-ranges']) expect(res.headers.get(header), header).toBeNull();
  expect(await res.json()).toEqual({ status, name: expect.any(String), message: expect.any(String), details: { reqId: expect.any(String) } });
}

describe.each(FILES)('GET %s', (url, file) => {
  it.each(['bytes=5-1', 'bytes=-0', 'bytes=99999999999-'])('with Range: %s is a 416 Error body, not the file’s headers', async (range) => {
    const res = await fetch(server.url + url, { headers: { range } });
    expect(res.headers.get('content-range')).toBe(`bytes */${statSync(file).size}`);
    await expectRefusal(res, 416);
  });

  it.each([{ 'if-match': 'x' }, { 'if-unmodified-since': 'Sat, 01 Jan 1970 00:00:00 GMT' }])('with %j is a 412 Error body, not the file’s headers', async (condition) => {
    const res = await fetch(server.url + url, { headers: condition });
    expect(res.headers.get('content-range')).toBeNull();
    await expectRefusal(res, 412);
  });

  it('is still the file, kept a day, and a part of it', async () => {
    const whole = await fetch(server.url + url);
    expect(whole.status).toBe(200);
    expect(whole.headers.get('cache-control')).toBe('public, max-age=86400');
    expect(whole.headers.get('content-type')).toMatch(/javascript/);
    expect((await whole.arrayBuffer()).byteLength).toBe(statSync(file).size);
    const part = await fetch(server.url + url, { headers: { range: 'bytes=0-9' } });
    expect(part.status).toBe(206);
    expect((await part.arrayBuffer()).byteLength).toBe(10);
  });
});
