/**
 * Issue 29: on S3 the parts of a parallel tus upload are sent as the parts of one multipart
 * upload (its span's), which becomes the file when the final upload names exactly those parts in
 * that order: read once for the SHA-1, never sent again. Whatever else a client does (parts named
 * in another order, a part left out and named later), the stored file is the bytes sent, under
 * their SHA-1, and the span's objects are gone once its last part is.
 *
 * "Sent once" is checked where it shows: a line between the service and the store (s3rver)
 * counts the bytes of every request by the kind of key it writes or reads.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import * as tus from 'tus-js-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { pdfBytes, sha1, SUBMISSION, venueWithAuthor } from './helpers.ts';
import { S3RVER_CREDENTIALS, startS3rver, type TestBucket } from './s3rver.ts';
import { encodeMetadata, metadataFor, parallelOptions, RecordingHttpStack, runUpload, signedInPerson, tusRequest, type Outcome, type Person } from './tus-helpers.ts';

const LONG = { timeout: 60_000 };
const MB = 1024 * 1024;
const PREFIX = 'spans-test/';
const METADATA = encodeMetadata(metadataFor(SUBMISSION, 'pdf', 'paper.pdf'));

/** Bytes sent to the store (`PUT`) and read from it (`GET`), by the area of the key: `spans`, `chunks`, `tmp`, `files`. */
type Traffic = Record<'put' | 'get', Record<string, number>>;

/** A line in front of the store counting every request's bytes, by method and area. */
async function countingLine(target: string): Promise<{ url: string; traffic: Traffic; close(): Promise<void> }> {
  const traffic: Traffic = { put: {}, get: {} };
  const to = new URL(target);
  // `/<bucket>/<prefix><area>/…?…`
  const areaOf = (path: string) => decodeURIComponent(path.split('?')[0] ?? '').slice(`/${PREFIX}`.length).split('/')[0] ?? '';
  const server: Server = createServer((req, res) => {
    const area = areaOf((req.url ?? '').replace(/^\/[^/]+/, ''));
    const add = (kind: 'put' | 'get', n: number) => (traffic[kind][area] = (traffic[kind][area] ?? 0) + n);
    // This line answers `Expect: 100-continue` itself (Node's server does).
    const { expect: _, ...headers } = req.headers;
    const forward = request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      if (req.method === 'GET') answer.on('data', (piece: Buffer) => add('get', piece.length));
      answer.pipe(res);
    });
    forward.on('error', () => res.destroy());
    if (req.method === 'PUT' && !req.headers['x-amz-copy-source']) req.on('data', (piece: Buffer) => add('put', piece.length));
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    traffic,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

let bucket: TestBucket;
let line: Awaited<ReturnType<typeof countingLine>>;
let server: TestServer;
let author: Person;

beforeAll(async () => {
  bucket = await startS3rver();
  line = await countingLine(bucket.endpoint);
  vi.stubEnv('AWS_ACCESS_KEY_ID', S3RVER_CREDENTIALS.accessKeyId);
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', S3RVER_CREDENTIALS.secretAccessKey);
  const storageUrl = `s3://${bucket.bucket}/${PREFIX}?endpoint=${encodeURIComponent(line.url)}&region=us-east-1&forcePathStyle=true`;
  server = await startServer({ STORAGE_URL: storageUrl, UPLOAD_HUMAN_VERIFICATION_AFTER: '0' });
  await venueWithAuthor(server);
  author = await signedInPerson(server);
});
afterAll(async () => {
  await server?.close();
  await line?.close();
  await bucket?.close();
  vi.unstubAllEnvs();
});
beforeEach(() => {
  line.traffic.put = {};
  line.traffic.get = {};
});

/** The bucket's keys in an area (`spans`, `chunks`, `tmp`). */
async function keys(area: string): Promise<string[]> {
  const listed = await bucket.client.send(new ListObjectsV2Command({ Bucket: bucket.bucket, Prefix: `${PREFIX}${area}/` }));
  return (listed.Contents ?? []).map((o) => o.Key ?? '');
}

async function create(headers: Record<string, string>): Promise<string> {
  const res = await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: { 'Upload-Metadata': METADATA, ...headers } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.headers.get('location') ?? '';
}

/** A partial upload sent whole in one PATCH. */
async function part(data: Buffer): Promise<string> {
  const url = await create({ 'Upload-Concat': 'partial', 'Upload-Length': String(data.length) });
  const res = await tusRequest(server, 'PATCH', url, { token: author.token, headers: { 'Upload-Offset': '0' }, body: data });
  expect(res.status, JSON.stringify(res.body)).toBe(204);
  return url;
}

/** A final upload of these parts: its `Attachment-Url`. */
async function final(parts: string[]): Promise<string | null> {
  const res = await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: { 'Upload-Metadata': METADATA, 'Upload-Concat': `final;${parts.join(' ')}` } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.headers.get('attachment-url');
}

async function readBack(url: string): Promise<Buffer> {
  const res = await fetch(`${server.url}${url}`, { headers: { authorization: `Bearer ${author.token}` } });
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

/**
 * A tus-js-client upload that succeeded with the file's address, whose bytes went to the store
 * once, as multipart parts, and were read back once for the SHA-1 (and sent once more when the
 * parts could not be the file as they lay: `copied`); nothing left of it in the bucket's spans.
 */
async function expectSentOnce(data: Buffer, outcome: Outcome, { copied }: { copied: boolean }): Promise<void> {
  expect(outcome.ok, outcome.ok ? '' : String(outcome.error)).toBe(true);
  const url = outcome.ok ? outcome.lastResponse.getHeader('Attachment-Url') : '';
  expect(url).toBe(`/pdf/${sha1(data)}.pdf`);
  const { put, get } = line.traffic;
  expect(put.spans).toBe(data.length);
  expect(put.chunks ?? 0).toBe(0);
  expect(get.spans).toBe(data.length);
  expect(put.tmp ?? 0).toBe(copied ? data.length : 0);
  expect((await readBack(url ?? '')).equals(data)).toBe(true);
  expect(await keys('spans')).toEqual([]);
  expect(await server.service.db('tus_spans')).toEqual([]);
}

describe('parallel tus uploads on S3', () => {
  it("tus-js-client's parts are sent once, as the parts of one multipart upload, which becomes the file when they were placed in order", LONG, async () => {
    // Three parts just over S3's smallest part.
    const data = pdfBytes(15 * MB + 5);
    let placedInOrder: boolean | undefined;
    const outcome = await runUpload(data, parallelOptions(server, author, {
      parallelUploads: 3,
      httpStack: new RecordingHttpStack(),
      onBeforeRequest: async (req: tus.HttpRequest) => {
        const parts = req.getHeader('Upload-Concat')?.match(/^final;(.+)$/)?.[1]?.split(' ');
        if (!parts) return;
        const ids = parts.map((url) => url.split('/').pop() ?? '');
        const rows = (await server.service.db('tus_uploads').whereIn('id', ids).select('id', 'span_part')) as Array<{ id: string; span_part: number | string }>;
        placedInOrder = ids.every((id, i) => Number(rows.find((r) => r.id === id)?.span_part) === i + 1);
      },
    }));
    // Creations sent at once may reach the service in another order (a busy machine): then
    // the parts cannot be the file as they lie, and it is copied once. The file is right either way.
    expect(placedInOrder).toBeDefined();
    await expectSentOnce(data, outcome, { copied: !placedInOrder });
  });

  it('parts named in another order are read from their places in the span and copied once, right', LONG, async () => {
    const pieces = [pdfBytes(5 * MB + 1), pdfBytes(5 * MB + 2), pdfBytes(5 * MB + 3)];
    const parts = [await part(pieces[0]!), await part(pieces[1]!), await part(pieces[2]!)];
    const url = await final([parts[1]!, parts[0]!, parts[2]!]);
    const data = Buffer.concat([pieces[1]!, pieces[0]!, pieces[2]!]);
    expect(url).toBe(`/pdf/${sha1(data)}.pdf`);
    expect(line.traffic.put.spans).toBe(data.length);
    expect(line.traffic.put.tmp).toBe(data.length);
    expect((await readBack(url ?? '')).equals(data)).toBe(true);
    expect(await keys('spans')).toEqual([]);
  });

  it('a part left out of one final upload is kept in the span for another, and the span goes with its last part', LONG, async () => {
    const pieces = [pdfBytes(5 * MB + 10), pdfBytes(5 * MB + 20), pdfBytes(5 * MB + 30)];
    const parts = [await part(pieces[0]!), await part(pieces[1]!), await part(pieces[2]!)];
    const first = await final([parts[0]!, parts[1]!]);
    expect((await readBack(first ?? '')).equals(Buffer.concat([pieces[0]!, pieces[1]!]))).toBe(true);
    // The span's object stays for the part left out.
    expect(await keys('spans')).toHaveLength(1);
    const second = await final([parts[2]!]);
    expect((await readBack(second ?? '')).equals(pieces[2]!)).toBe(true);
    expect(await keys('spans')).toEqual([]);
    expect(await server.service.db('tus_spans')).toEqual([]);
  });

  it('a part under S3\'s smallest part is a chunk object, and a span of them is copied as before', LONG, async () => {
    const pieces = [pdfBytes(200_000), pdfBytes(300_000)];
    const parts = [await part(pieces[0]!), await part(pieces[1]!)];
    const url = await final(parts);
    const data = Buffer.concat(pieces);
    expect((await readBack(url ?? '')).equals(data)).toBe(true);
    expect(line.traffic.put.spans ?? 0).toBe(0);
    expect(line.traffic.put.chunks).toBe(data.length);
    expect(await keys('chunks')).toEqual([]);
  });

  it('a final upload mixing a part kept in the span with a part in chunks is the bytes sent, under their SHA-1', LONG, async () => {
    const pieces = [pdfBytes(5 * MB + 7), pdfBytes(100_000)];
    const parts = [await part(pieces[0]!), await part(pieces[1]!)];
    const url = await final(parts);
    const data = Buffer.concat(pieces);
    expect(url).toBe(`/pdf/${sha1(data)}.pdf`);
    expect((await readBack(url ?? '')).equals(data)).toBe(true);
  });

  it('a part sent again after it was kept in the span (its request stopped before the offset moved) stays as first kept, and the file is stored under its own SHA-1', LONG, async () => {
    const kept = pdfBytes(5 * MB + 11);
    const other = pdfBytes(5 * MB + 11);
    const small = pdfBytes(50_000);
    const first = await part(kept);
    // As if the request had stopped after the part was kept, before it moved the offset on.
    await server.service.db('tus_uploads').where({ id: first.split('/').pop() }).update({ upload_offset: 0, parts: 0 });
    const again = await tusRequest(server, 'PATCH', first, { token: author.token, headers: { 'Upload-Offset': '0' }, body: other });
    expect(again.status, JSON.stringify(again.body)).toBe(204);
    const url = await final([first, await part(small)]);
    const stored = await readBack(url ?? '');
    expect(url).toBe(`/pdf/${sha1(stored)}.pdf`);
    expect(stored.equals(Buffer.concat([kept, small]))).toBe(true);
  });

  it("tus-js-client's chunks of at least 5 MiB are the parts of the upload's own multipart upload, which becomes the file", LONG, async () => {
    const data = pdfBytes(16 * MB + 9);
    const outcome = await runUpload(data, { ...parallelOptions(server, author), parallelUploads: 1, chunkSize: 5 * MB + 1 });
    await expectSentOnce(data, outcome, { copied: false });
  });

  it('smaller chunks are chunk objects, copied once at the end, as before', LONG, async () => {
    const data = pdfBytes(3 * MB + 1);
    const outcome = await runUpload(data, { ...parallelOptions(server, author), parallelUploads: 1, chunkSize: MB });
    expect(outcome.ok, outcome.ok ? '' : String(outcome.error)).toBe(true);
    expect(line.traffic.put.spans ?? 0).toBe(0);
    expect(line.traffic.put.chunks).toBe(data.length);
    expect((await readBack(`/pdf/${sha1(data)}.pdf`)).equals(data)).toBe(true);
    expect(await keys('chunks')).toEqual([]);
  });

  it('a part sent again with another length (its first request stopped before the offset moved) takes the place of the first', LONG, async () => {
    const first = pdfBytes(6 * MB);
    const again = pdfBytes(5 * MB + 512);
    const rest = pdfBytes(MB);
    const length = again.length + rest.length;
    const url = await create({ 'Upload-Length': String(length) });
    const sent = await tusRequest(server, 'PATCH', url, { token: author.token, headers: { 'Upload-Offset': '0' }, body: first.subarray(0, 5 * MB + 700) });
    expect(sent.status, JSON.stringify(sent.body)).toBe(204);
    // As if the request had stopped after its part was kept, before it moved the offset on.
    await server.service.db('tus_uploads').where({ id: url.split('/').pop() }).update({ upload_offset: 0, parts: 0 });
    for (const [offset, body] of [[0, again], [again.length, rest]] as const) {
      const res = await tusRequest(server, 'PATCH', url, { token: author.token, headers: { 'Upload-Offset': String(offset) }, body });
      expect(res.status, JSON.stringify(res.body)).toBe(204);
    }
    const head = await tusRequest(server, 'HEAD', url, { token: author.token });
    const data = Buffer.concat([again, rest]);
    expect(head.headers.get('attachment-url')).toBe(`/pdf/${sha1(data)}.pdf`);
    expect((await readBack(`/pdf/${sha1(data)}.pdf`)).equals(data)).toBe(true);
  });

  it('a terminated span leaves nothing in the bucket or the database', LONG, async () => {
    const a = await part(pdfBytes(5 * MB + 1));
    const b = await part(pdfBytes(5 * MB + 1));
    expect(await server.service.db('tus_spans')).toHaveLength(1);
    for (const url of [a, b]) expect((await tusRequest(server, 'DELETE', url, { token: author.token })).status).toBe(204);
    expect(await server.service.db('tus_spans')).toEqual([]);
    expect(await keys('spans')).toEqual([]);
  });
});
