/**
 * The service with `STORAGE_URL` at an S3-compatible store (s3rver, a real server on 127.0.0.1):
 * uploads, whole and in chunks, land in the bucket and nowhere on the server's disk but for the
 * request's own temporary file; downloads are streamed from the bucket with the same ranges,
 * ETags, 304s and zips as from the disk.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { HeadObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { cookieHeader } from '../helpers/cookies.ts';
import { Client, rawExchange, sendMultipart } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { filesUnder, pdfBytes, sha1, SUBMISSION, submissionContent, submitPaper, venueWithAuthor } from './helpers.ts';
import { S3RVER_CREDENTIALS, startS3rver, type TestBucket } from './s3rver.ts';
import { encodeMetadata, metadataFor, tusRequest } from './tus-helpers.ts';
import { loggedIn } from '../helpers/users.ts';

/** Megabytes through an S3 server in the test process. */
const LONG = { timeout: 60_000 };

const MB = 1024 * 1024;
const PREFIX = 'service/';

let bucket: TestBucket;
let server: TestServer;
let author: Client;
let authorId: string;
let root: Client;

beforeAll(async () => {
  bucket = await startS3rver();
  vi.stubEnv('AWS_ACCESS_KEY_ID', S3RVER_CREDENTIALS.accessKeyId);
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', S3RVER_CREDENTIALS.secretAccessKey);
  server = await startServer({ STORAGE_URL: bucket.storageUrl(PREFIX) });
  ({ author, authorId, root } = await venueWithAuthor(server));
});
afterAll(async () => {
  await server?.close();
  await bucket?.close();
  vi.unstubAllEnvs();
});

/** The bucket's keys under the service's prefix, without it. */
async function keys(under = ''): Promise<string[]> {
  const listed = await bucket.client.send(new ListObjectsV2Command({ Bucket: bucket.bucket, Prefix: `${PREFIX}${under}` }));
  return (listed.Contents ?? []).map((o) => (o.Key ?? '').slice(PREFIX.length)).sort();
}

function chunk(clientUploadId: string, chunkIndex: number, totalChunks: number, data: Uint8Array) {
  return sendMultipart(author, 'PUT', '/attachment/chunk', { name: 'pdf', invitationId: SUBMISSION, clientUploadId, chunkIndex, totalChunks }, { filename: 'paper.pdf', data });
}

describe('a server storing its files in an S3-compatible bucket', () => {
  let data: Buffer;
  let noteId: string;

  it('keeps a whole upload in the bucket under its content address, and nothing on its own disk', async () => {
    data = pdfBytes(700_000);
    const { url, note } = await submitPaper(author, authorId, data);
    expect(url).toBe(`/pdf/${sha1(data)}.pdf`);
    expect(note.status).toBe(200);
    noteId = note.body.id;
    const head = await bucket.client.send(new HeadObjectCommand({ Bucket: bucket.bucket, Key: `${PREFIX}files/pdf/${sha1(data)}.pdf` }));
    expect(head.ContentLength).toBe(data.length);
    expect(await filesUnder(server.dataDir)).toEqual([]);
  });

  it('streams it back whole, with its type, ETag and length', async () => {
    const res = await fetch(`${server.url}/pdf?id=${noteId}`, { headers: { cookie: cookieHeader(author) } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/pdf');
    expect(res.headers.get('etag')).toBe(`"${sha1(data)}"`);
    expect(res.headers.get('content-length')).toBe(String(data.length));
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    expect(Buffer.from(await res.arrayBuffer()).equals(data)).toBe(true);
  });

  it('serves a range, answers 304 to a matching ETag, and 416 to a range outside the file', async () => {
    const part = await fetch(`${server.url}/attachment?id=${noteId}&name=pdf`, { headers: { cookie: cookieHeader(author), range: 'bytes=100-199' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 100-199/${data.length}`);
    expect(Buffer.from(await part.arrayBuffer()).equals(data.subarray(100, 200))).toBe(true);
    const tail = await fetch(`${server.url}/pdf?id=${noteId}`, { headers: { cookie: cookieHeader(author), range: 'bytes=-10' } });
    expect(tail.status).toBe(206);
    expect(Buffer.from(await tail.arrayBuffer()).equals(data.subarray(-10))).toBe(true);

    // fetch adds `Cache-Control: no-cache` to a conditional request unless it carries its own.
    const cached = await fetch(`${server.url}/pdf?id=${noteId}`, { headers: { cookie: cookieHeader(author), 'if-none-match': `"${sha1(data)}"`, 'cache-control': 'max-age=0' } });
    expect(cached.status).toBe(304);
    expect(await cached.text()).toBe('');

    const outside = await fetch(`${server.url}/pdf?id=${noteId}`, { headers: { cookie: cookieHeader(author), range: `bytes=${data.length}-` } });
    expect(outside.status).toBe(416);
    expect(await outside.json()).toMatchObject({ status: 416, name: 'RangeNotSatisfiableError' });
  });

  it('assembles a chunked upload in the bucket; the last two chunks sent together both answer the URL', async () => {
    const whole = pdfBytes(12 * MB + 5);
    const parts = [0, 1, 2].map((i) => whole.subarray(i * 5 * MB, (i + 1) * 5 * MB));
    expect((await chunk('s3-chunked', 0, 3, parts[0]!)).body).toEqual({ 0: 'completed', 1: 'missing', 2: 'missing' });
    const uploadId = (await server.service.db('chunked_uploads').where({ client_upload_id: 's3-chunked' }).first('id')).id as string;
    expect(await keys('chunks/')).toEqual([`chunks/${uploadId}/0`]);
    // The chunks are in the bucket, not on the server's disk.
    expect(await filesUnder(server.dataDir)).toEqual([]);

    const url = `/pdf/${sha1(whole)}.pdf`;
    const answers = await Promise.all([1, 2].map((i) => chunk('s3-chunked', i, 3, parts[i]!)));
    expect(answers.map((a) => a.body)).toEqual([{ url }, { url }]);
    // The assembly's temporary key and the chunks are gone; the file is in its place.
    expect(await keys('chunks/')).toEqual([]);
    expect(await keys('tmp/')).toEqual([]);
    expect(await keys('files/')).toContain(`files${url}`);

    const note = await author.post('/notes', { invitation: SUBMISSION, content: submissionContent(authorId, url) });
    const res = await fetch(`${server.url}/pdf?id=${note.body.id}`, { headers: { cookie: cookieHeader(author) } });
    expect(Buffer.from(await res.arrayBuffer()).equals(whole)).toBe(true);
    expect(await readdir(path.join(server.dataDir, 'tmp'))).toEqual([]);
  });

  it('streams several files from the bucket as one zip', async () => {
    const other = (await submitPaper(author, authorId, pdfBytes(3000))).note.body.id as string;
    const res = await fetch(`${server.url}/pdf?ids=${noteId}&ids=${other}`, { headers: { cookie: cookieHeader(author) } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/zip');
    const zip = Buffer.from(await res.arrayBuffer());
    // Two entries in the central directory, stored as sent (a PDF of random bytes does not shrink).
    expect(zip.toString('latin1').split('PK\u0001\u0002').length - 1).toBe(2);
    expect(zip.length).toBeGreaterThan(data.length);
  });

  it('cuts a zip short when a file is gone from the bucket once the zip is under way, and goes on serving', LONG, async () => {
    const big = pdfBytes(20 * MB);
    const first = (await submitPaper(author, authorId, big)).note.body.id as string;
    const small = pdfBytes(2000);
    const second = (await submitPaper(author, authorId, small)).note.body.id as string;
    const res = await fetch(`${server.url}/pdf?ids=${first}&ids=${second}`, { headers: { cookie: cookieHeader(author) } });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read();
    // The zip is still sending the first file (the client reads slowly): the second goes.
    const { DeleteObjectCommand } = await import('@aws-sdk/client-s3');
    await bucket.client.send(new DeleteObjectCommand({ Bucket: bucket.bucket, Key: `${PREFIX}files/pdf/${sha1(small)}.pdf` }));
    const drain = async () => {
      for (let part = await reader.read(); !part.done; part = await reader.read());
    };
    await expect(drain()).rejects.toThrow();
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  });

  it("cuts a field's limit to the 5 GiB S3 keeps or copies in one request", async () => {
    const huge = `${SUBMISSION.split('/-/')[0]}/-/Huge_Files`;
    const made = await root.post('/invitations', { id: huge, domain: SUBMISSION.split('/-/')[0], form: { video: { order: 1, value: { param: { type: 'file', extensions: ['mp4'], maxSize: 6000 } } } } });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const rules = await author.get(`/attachment/rules?invitationId=${encodeURIComponent(huge)}&name=video`);
    expect(rules.status).toBe(200);
    expect(rules.body.maxBytes).toBe(5 * 1024 ** 3);
  });

  it('is a 404 once a stored file is gone from the bucket', async () => {
    const gone = pdfBytes(2000);
    const { note } = await submitPaper(author, authorId, gone);
    const { DeleteObjectCommand } = await import('@aws-sdk/client-s3');
    await bucket.client.send(new DeleteObjectCommand({ Bucket: bucket.bucket, Key: `${PREFIX}files/pdf/${sha1(gone)}.pdf` }));
    const res = await fetch(`${server.url}/pdf?id=${note.body.id}`, { headers: { cookie: cookieHeader(author) } });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ name: 'NotFoundError' });
  });
});

describe('a server whose bucket stops answering', () => {
  it('answers 503 with Retry-After, never a 500, and keeps nothing of an upload it could not store', LONG, async () => {
    const own = await startS3rver('stopping-bucket');
    let stopped = false;
    const running = await startServer({ STORAGE_URL: own.storageUrl(PREFIX) });
    try {
      const { author: writer, authorId: writerId } = await venueWithAuthor(running);
      const kept = pdfBytes(3000);
      const { note } = await submitPaper(writer, writerId, kept);
      expect(note.status).toBe(200);
      await own.close();
      stopped = true;
      const read = await fetch(`${running.url}/pdf?id=${note.body.id}`, { headers: { cookie: cookieHeader(writer) } });
      expect(read.status).toBe(503);
      expect(read.headers.get('retry-after')).toBe('5');
      expect(await read.json()).toMatchObject({ name: 'ServiceUnavailableError', status: 503 });
      const upload = await sendMultipart(writer, 'PUT', '/attachment', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'p.pdf', data: pdfBytes(5000) }, { 'cf-turnstile-token': 'dev-ok' });
      expect(upload.status).toBe(503);
      expect(upload.body).toMatchObject({ name: 'ServiceUnavailableError' });
      // The request's temporary file went with it.
      expect((await filesUnder(running.dataDir)).filter((file) => file.includes(`${path.sep}tmp${path.sep}`))).toEqual([]);
      // The same through tus: a PATCH whose bytes cannot be stored keeps none of them.
      const token = (await loggedIn(running, (await running.service.services.profiles.listUsers()).find((user) => user.id === writerId)?.emails[0] ?? 'the writer')).token;
      const created = await tusRequest(running, 'POST', '/attachment/tus', { token, headers: { 'Upload-Length': '6000', 'Upload-Metadata': encodeMetadata(metadataFor(SUBMISSION, 'pdf', 'p.pdf')) } });
      expect(created.status).toBe(201);
      const patched = await tusRequest(running, 'PATCH', created.headers.get('location') ?? '', { token, headers: { 'Upload-Offset': '0' }, body: pdfBytes(6000) });
      expect(patched.status).toBe(503);
      expect(patched.body).toMatchObject({ name: 'ServiceUnavailableError' });
      expect((await filesUnder(running.dataDir)).filter((file) => file.includes(`${path.sep}tmp${path.sep}`))).toEqual([]);
    } finally {
      await running.close();
      if (!stopped) await own.close();
    }
  });
});

describe('MAX_UPLOAD_MB above the 5 GiB S3 keeps in one request', () => {
  const FIVE_GIB = 5 * 1024 ** 3;
  let big: TestServer;
  let uploader: Client;

  beforeAll(async () => {
    big = await startServer({ STORAGE_URL: bucket.storageUrl('large/'), MAX_UPLOAD_MB: '10240' });
    ({ author: uploader } = await venueWithAuthor(big));
  });
  afterAll(async () => {
    await big?.close();
  });

  it('is cut to 5 GiB everywhere: the rules, Tus-Max-Size, and a body announcing more is refused before it is read', async () => {
    const rules = await uploader.get(`/attachment/rules?invitationId=${encodeURIComponent(SUBMISSION)}&name=pdf`);
    expect(rules.status).toBe(200);
    expect(rules.body.maxUploadBytes).toBe(FIVE_GIB);
    const options = await tusRequest(big, 'OPTIONS', '/attachment/tus');
    expect(options.headers.get('tus-max-size')).toBe(String(FIVE_GIB));
    // The file part first: no field yet says which limit is the field's, so the server's own applies.
    const boundary = 'cut-to-five';
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="paper.pdf"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.7\n`;
    const refused = await rawExchange(
      big.url,
      `PUT /attachment HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${cookieHeader(uploader)}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${FIVE_GIB + 1024 * 1024}\r\n\r\n${head}`,
    );
    expect(refused.status).toBe(413);
    expect(await filesUnder(big.dataDir)).toEqual([]);
  });
});
