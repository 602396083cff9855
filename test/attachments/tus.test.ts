/**
 * Issue 29: uploads through tus 1.0 on `/attachment/tus`, driven by tus-js-client as a frontend
 * drives it (its Node build, unmodified), and by raw requests where the library sends nothing
 * wrong on purpose. The server's public address is a TCP line in front of it (`startLine`): a
 * `Location` names that address, so every request of the library goes through the line, which
 * can drop the connection mid-upload and counts the bytes sent.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import * as tus from 'tus-js-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorBody } from '../../shared/errors.ts';
import { TestClock } from '../helpers/clock.ts';
import type { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { waitUntil } from '../helpers/wait.ts';
import { filesUnder, pdfBytes, sha1, SUBMISSION, submissionContent, temporaryFiles, VENUE, venueWithAuthor } from './helpers.ts';
import {
  checksum,
  encodeMetadata,
  expectRefusal,
  HTTP_DATE,
  metadataFor,
  rawRequest,
  RecordingHttpStack,
  runUpload,
  signedInPerson,
  startLine,
  statusOf,
  tusCalls,
  tusRequest,
  type Line,
  type Outcome,
  type Person,
  type TusReply,
} from './tus-helpers.ts';

const MB = 1024 * 1024;
/** The Node build's URL storage in a file (a page's localStorage, in Node): exported, not in the types. */
const { FileUrlStorage } = tus as unknown as { FileUrlStorage: new (file: string) => tus.UrlStorage };
const ABANDON_SECONDS = 60;
const SMALL = `${VENUE}/-/TusSmall`;
/** The small field's `maxSize` (0.01 MB), in bytes. */
const SMALL_MAX = 10485;

const clock = new TestClock();
let line: Line;
let server: TestServer;
let root: Client;
let author: Person;
let urlStore: string;

beforeAll(async () => {
  line = await startLine();
  server = await startServer(
    { BASE_URL: line.url, UPLOAD_ABANDON_SECONDS: String(ABANDON_SECONDS), UPLOAD_HUMAN_VERIFICATION_AFTER: '0', MAX_UPLOAD_MB: '4' },
    undefined,
    { now: clock.now },
  );
  line.target = server.url;
  ({ root } = await venueWithAuthor(server));
  author = await signedInPerson(server);
  const small = await root.post('/invitations', {
    id: SMALL,
    domain: VENUE,
    form: { doc: { order: 1, value: { param: { type: 'file', extensions: ['pdf'], maxSize: 0.01 } } } },
  });
  if (small.status !== 200) throw new Error(JSON.stringify(small.body));
  urlStore = await mkdtemp(path.join(tmpdir(), 'tus-urls-'));
});
afterAll(async () => {
  await server?.close();
  await line?.close();
  if (urlStore) await rm(urlStore, { recursive: true, force: true });
});

const ENDPOINT = () => `${line.url}/attachment/tus`;
const PDF_FIELD = () => metadataFor(SUBMISSION, 'pdf', 'paper.pdf');

/** tus-js-client's options as a frontend sets them; no retries unless a test asks (a failure shows). */
function options(extra: Partial<tus.UploadOptions> = {}, person: Person = author): tus.UploadOptions & { httpStack: RecordingHttpStack } {
  return { endpoint: ENDPOINT(), headers: { Authorization: `Bearer ${person.token}` }, metadata: PDF_FIELD(), retryDelays: null, httpStack: new RecordingHttpStack(), ...extra } as tus.UploadOptions & { httpStack: RecordingHttpStack };
}

/** What went wrong, for an assertion's message. */
const why = (outcome: Outcome) => (outcome.ok ? 'ok' : String(outcome.error));
const lines = (stack: RecordingHttpStack) => stack.exchanges.map((e) => `${e.method} ${e.status}`);
const pdfUrl = (data: Uint8Array) => `/pdf/${sha1(data)}.pdf`;
const { create, patch, readBack } = tusCalls(() => ({ server, author }));

/**
 * The bytes in files being received (`tmp/`, the first 64 KiB written at once, then a growing
 * buffer at a time) and in uploads' data files (`chunks/<id>/data`, where later parts are written
 * in place).
 */
async function bytesReceiving(): Promise<number> {
  const chunks = path.join(server.dataDir, 'chunks') + path.sep;
  const files = [...(await temporaryFiles(server.dataDir)), ...(await filesUnder(server.dataDir)).filter((f) => f.startsWith(chunks) && path.basename(f) === 'data')];
  const sizes = await Promise.all(files.map((f) => stat(f).then((s) => s.size, () => 0)));
  return sizes.reduce((sum, size) => sum + size, 0);
}

/**
 * Runs an upload whose connection the line holds after `bytes`, and cuts it once the server is
 * writing the held PATCH's bytes (a file being received in the data folder's `tmp/`, or an
 * upload's data file growing): a cut the server sees mid-request, whatever the timing. Answers
 * how the cut client ended.
 */
async function cutMidPatch(data: Buffer, opts: tus.UploadOptions, bytes: number): Promise<Outcome> {
  const before = await bytesReceiving();
  line.holdAfter(bytes);
  const running = runUpload(data, opts);
  await waitUntil(async () => line.held && (await bytesReceiving()) > before, 'a PATCH held midway on the server', 15_000);
  line.cut();
  return running;
}

/**
 * Waits until no request is writing the upload any more (a cut PATCH may still be ending on the
 * server): an empty PATCH at the offset HEAD answers is accepted only then (423 or 409 before).
 */
async function settled(url: string, person: Person = author): Promise<number> {
  let offset = -1;
  await waitUntil(async () => {
    const head = await tusRequest(server, 'HEAD', url, { token: person.token });
    if (head.status !== 200) return false;
    offset = Number(head.headers.get('upload-offset'));
    return (await patch(url, offset, new Uint8Array(0), {}, person)).status === 204;
  }, 'the cut request ended on the server', 15_000);
  return offset;
}

/** `Upload-Expires` as milliseconds, checked to be an HTTP date. */
function expiresOf(value: string | string[] | null | undefined): number {
  expect(value).toMatch(HTTP_DATE);
  return Date.parse(String(value));
}

describe('tus-js-client uploads', () => {
  it('a whole upload answers Attachment-Url on its last PATCH and on HEAD, and a note\'s file field accepts it', async () => {
    const data = pdfBytes(300_000);
    const opts = options();
    const outcome = await runUpload(data, opts);
    expect(outcome.ok, why(outcome)).toBe(true);
    if (!outcome.ok) return;
    const url = pdfUrl(data);
    expect(lines(opts.httpStack)).toEqual(['POST 201', 'PATCH 204']);
    const [post, sent] = opts.httpStack.exchanges;
    expect(post?.responseHeaders.location).toMatch(new RegExp(`^${line.url}/attachment/tus/[^/?#]+$`));
    expect(post?.responseHeaders['tus-resumable']).toBe('1.0.0');
    expiresOf(post?.responseHeaders['upload-expires']);
    expect(sent?.headers['Upload-Offset']).toBe('0');
    expect(sent?.bodyBytes).toBe(data.length);
    expect(sent?.responseHeaders['upload-offset']).toBe(String(data.length));
    expect(outcome.lastResponse.getHeader('Attachment-Url')).toBe(url);

    const head = await tusRequest(server, 'HEAD', outcome.upload.url ?? '', { token: author.token });
    expect(head.status).toBe(200);
    expect(Object.fromEntries(['tus-resumable', 'upload-offset', 'upload-length', 'upload-metadata', 'cache-control', 'attachment-url'].map((h) => [h, head.headers.get(h)]))).toEqual({
      'tus-resumable': '1.0.0',
      'upload-offset': String(data.length),
      'upload-length': String(data.length),
      'upload-metadata': post?.headers['Upload-Metadata'],
      'cache-control': 'no-store',
      'attachment-url': url,
    });
    expect((await readBack(url)).equals(data)).toBe(true);

    const note = await author.client.post('/notes', { invitation: SUBMISSION, content: submissionContent(author.id, url) });
    expect(note.status, JSON.stringify(note.body)).toBe(200);
    const viaNote = await fetch(`${server.url}/pdf?id=${note.body.id}`, { headers: { authorization: `Bearer ${author.token}` } });
    expect(viaNote.status).toBe(200);
    expect(Buffer.from(await viaNote.arrayBuffer()).equals(data)).toBe(true);
    // Nothing of the upload is left besides the stored file.
    await waitUntil(async () => (await filesUnder(server.dataDir)).every((f) => !/^[/\\](chunks|tmp)[/\\]/.test(f.slice(server.dataDir.length))), 'the upload\'s parts removed');
  });

  it('creation-with-upload: the POST carries the first chunk, or the whole file and then answers Attachment-Url itself', async () => {
    const data = pdfBytes(250_000);
    const chunked = options({ uploadDataDuringCreation: true, chunkSize: 100_000 });
    const outcome = await runUpload(data, chunked);
    expect(outcome.ok, why(outcome)).toBe(true);
    expect(lines(chunked.httpStack)).toEqual(['POST 201', 'PATCH 204', 'PATCH 204']);
    expect(chunked.httpStack.exchanges.map((e) => [e.bodyBytes, e.responseHeaders['upload-offset']])).toEqual([
      [100_000, '100000'],
      [100_000, '200000'],
      [50_000, '250000'],
    ]);
    expect(outcome.ok && outcome.lastResponse.getHeader('Attachment-Url')).toBe(pdfUrl(data));

    const whole = pdfBytes(120_000);
    const once = options({ uploadDataDuringCreation: true });
    const single = await runUpload(whole, once);
    expect(single.ok, why(single)).toBe(true);
    expect(lines(once.httpStack)).toEqual(['POST 201']);
    expect(once.httpStack.exchanges[0]?.responseHeaders['upload-offset']).toBe(String(whole.length));
    expect(single.ok && single.lastResponse.getHeader('Attachment-Url')).toBe(pdfUrl(whole));
    expect((await readBack(pdfUrl(whole))).equals(whole)).toBe(true);
  });

  it('deferred length: a stream of unknown size is created with Upload-Defer-Length and told its length at the end', async () => {
    const data = pdfBytes(250_000);
    const parts = Array.from({ length: 25 }, (_, i) => data.subarray(i * 10_000, (i + 1) * 10_000));
    let midway: TusReply | undefined;
    const opts = options({
      uploadLengthDeferred: true,
      chunkSize: 100_000,
      // Before the second PATCH (tus-js-client awaits this): the upload as HEAD shows it meanwhile.
      onBeforeRequest: async (req) => {
        if (req.getMethod() === 'PATCH' && req.getHeader('Upload-Offset') === '100000' && !midway) midway = await tusRequest(server, 'HEAD', req.getURL(), { token: author.token });
      },
    });
    const outcome = await runUpload(Readable.from(parts, { objectMode: false }), opts);
    expect(outcome.ok, why(outcome)).toBe(true);
    const [post, ...patches] = opts.httpStack.exchanges;
    expect(post?.headers['Upload-Defer-Length']).toBe('1');
    expect(post?.headers['Upload-Length']).toBeUndefined();
    expect(post?.status).toBe(201);
    expect(midway?.status).toBe(200);
    expect(midway?.headers.get('upload-defer-length')).toBe('1');
    expect(midway?.headers.get('upload-length')).toBeNull();
    expect(midway?.headers.get('upload-offset')).toBe('100000');
    expect(patches.every((p) => p.status === 204)).toBe(true);
    expect(patches.at(-1)?.headers['Upload-Length']).toBe(String(data.length));
    expect(outcome.ok && outcome.lastResponse.getHeader('Attachment-Url')).toBe(pdfUrl(data));
    expect((await readBack(pdfUrl(data))).equals(data)).toBe(true);
  });

  it('parallel parts (concatenation) give the same file, and the final upload\'s HEAD answers Attachment-Url', async () => {
    const data = pdfBytes(600_007);
    let partial: TusReply | undefined;
    const opts = options({
      parallelUploads: 3,
      metadataForPartialUploads: PDF_FIELD(),
      // Before the final upload is created (the server may then let its parts go): a part as HEAD shows it.
      onBeforeRequest: async (req) => {
        const parts = req.getHeader('Upload-Concat')?.match(/^final;(\S+)/);
        if (parts?.[1]) partial = await tusRequest(server, 'HEAD', parts[1], { token: author.token });
      },
    });
    const outcome = await runUpload(data, opts);
    expect(outcome.ok, why(outcome)).toBe(true);
    if (!outcome.ok) return;
    const posts = opts.httpStack.of('POST');
    expect(posts.map((p) => [p.headers['Upload-Concat']?.split(';')[0], p.status])).toEqual([['partial', 201], ['partial', 201], ['partial', 201], ['final', 201]]);
    expect(opts.httpStack.of('PATCH').map((p) => p.status)).toEqual([204, 204, 204]);
    expect(opts.httpStack.of('PATCH').reduce((sum, p) => sum + p.bodyBytes, 0)).toBe(data.length);

    expect(partial?.status).toBe(200);
    expect(partial?.headers.get('upload-concat')).toBe('partial');
    const final = await tusRequest(server, 'HEAD', outcome.upload.url ?? '', { token: author.token });
    expect(final.status).toBe(200);
    // tus 1.0: "its value as received in the upload creation request".
    expect(final.headers.get('upload-concat')).toBe(posts[3]?.headers['Upload-Concat']);
    expect(final.headers.get('upload-length')).toBe(String(data.length));
    expect(final.headers.get('upload-offset')).toBe(String(data.length));
    expect(final.headers.get('attachment-url')).toBe(pdfUrl(data));
    expect((await readBack(pdfUrl(data))).equals(data)).toBe(true);
    // Concatenation: a final upload takes no PATCH (MUST 403), at its offset or any other.
    expectRefusal(await patch(outcome.upload.url ?? '', data.length, new Uint8Array(0)), 403);
    expectRefusal(await patch(outcome.upload.url ?? '', 0, pdfBytes(10)), 403);
  });

  it('partial uploads are checked at creation like the final one: without metadata they are refused', async () => {
    const opts = options({ parallelUploads: 2 });
    const outcome = await runUpload(pdfBytes(50_000), opts);
    // The other part may still be under way: stopped, as a page would on the error.
    await outcome.upload.abort();
    expect(outcome.ok).toBe(false);
    expect(statusOf(outcome)).toBe(400);
    const refused = opts.httpStack.of('POST').find((p) => p.status === 400);
    expect(ErrorBody.safeParse(JSON.parse(refused?.responseBody ?? '{}')).success).toBe(true);
  });

  it('a "PDF" without %PDF- is refused when complete, whole or in parallel parts, and the upload is gone', async () => {
    const fake = Buffer.alloc(60_000, 'GIF89a not a pdf ');
    const opts = options();
    const outcome = await runUpload(fake, opts);
    expect(statusOf(outcome)).toBe(400);
    const last = opts.httpStack.exchanges.at(-1);
    expect(last?.method).toBe('PATCH');
    expect(JSON.parse(last?.responseBody ?? '{}')).toMatchObject({ status: 400, name: 'ValidationError' });
    expect((await tusRequest(server, 'HEAD', outcome.upload.url ?? '', { token: author.token })).status).toBe(404);

    const inParts = options({ parallelUploads: 3, metadataForPartialUploads: PDF_FIELD() });
    const parallel = await runUpload(fake, inParts);
    expect(statusOf(parallel)).toBe(400);
    expect(inParts.httpStack.exchanges.at(-1)?.headers['Upload-Concat']).toMatch(/^final;/);
  });
});

describe('resuming', () => {
  it('an upload cut by a dropped connection is finished after a page reload, sending only the missing bytes', async () => {
    const data = pdfBytes(MB);
    const urlStorage = new FileUrlStorage(path.join(urlStore, 'cut.json'));
    const chunkSize = 128 * 1024;
    const first = await cutMidPatch(data, options({ urlStorage, chunkSize }), 600_000);
    expect(first.ok).toBe(false);
    expect(statusOf(first)).toBe(0);
    const url = first.upload.url ?? '';
    // Every chunk sent whole before the cut is kept (the cut came past 4 of them).
    const offset = await settled(url);
    expect(offset).toBeGreaterThanOrEqual(4 * chunkSize);
    expect(offset).toBeLessThan(data.length);

    // The "reloaded page": a new client finds the upload in its URL storage by the file's fingerprint.
    line.resetCount();
    const again = options({ urlStorage, chunkSize });
    const second = await runUpload(data, again, async (upload) => {
      const previous = await upload.findPreviousUploads();
      expect(previous.map((p) => p.uploadUrl)).toEqual([url]);
      upload.resumeFromPreviousUpload(previous[0]!);
    });
    expect(second.ok, why(second)).toBe(true);
    expect(again.httpStack.exchanges[0]).toMatchObject({ method: 'HEAD', status: 200 });
    expect(again.httpStack.exchanges[0]?.responseHeaders['upload-offset']).toBe(String(offset));
    expect(again.httpStack.of('POST')).toEqual([]);
    const patches = again.httpStack.of('PATCH');
    expect(patches[0]?.headers['Upload-Offset']).toBe(String(offset));
    expect(patches.reduce((sum, p) => sum + p.bodyBytes, 0)).toBe(data.length - offset);
    // On the wire: the missing bytes and the requests' headers, nothing of what the server has.
    expect(line.bytesToServer).toBeGreaterThanOrEqual(data.length - offset);
    expect(line.bytesToServer).toBeLessThan(data.length - offset + 16 * 1024);
    expect(second.ok && second.lastResponse.getHeader('Attachment-Url')).toBe(pdfUrl(data));
    expect((await readBack(pdfUrl(data))).equals(data)).toBe(true);
  });

  it('a single PATCH cut midway keeps what arrived; a new client given the upload URL sends the rest', async () => {
    const data = pdfBytes(MB);
    const first = await cutMidPatch(data, options(), 500_000);
    expect(statusOf(first)).toBe(0);
    const url = first.upload.url ?? '';
    const offset = await settled(url);
    expect(offset, 'the bytes that arrived before the cut are kept (tus 1.0: "store as much of the received data as possible")').toBeGreaterThan(0);
    expect(offset).toBeLessThan(data.length);

    const again = options({ uploadUrl: url });
    const second = await runUpload(data, again);
    expect(second.ok, why(second)).toBe(true);
    expect(lines(again.httpStack)).toEqual(['HEAD 200', 'PATCH 204']);
    expect(again.httpStack.of('PATCH')[0]?.bodyBytes).toBe(data.length - offset);
    expect((await readBack(pdfUrl(data))).equals(data)).toBe(true);
  });
});

describe('a creation cut mid-body', () => {
  it('leaves nothing: its client never learnt the URL, so no place among the unfinished uploads is held', async () => {
    const open = async () => Number(((await server.service.db('tus_uploads').where({ profile_id: author.id }).count({ n: '*' }).first()) as { n: number | string }).n);
    const before = await open();
    const files = await filesUnder(server.dataDir);
    const { hostname, port } = new URL(server.url);
    const socket = connect(Number(port), hostname);
    socket.on('error', () => {});
    socket.write(
      `POST /attachment/tus HTTP/1.1\r\nHost: ${new URL(server.url).host}\r\nAuthorization: Bearer ${author.token}\r\nTus-Resumable: 1.0.0\r\n` +
        `Upload-Length: 300000\r\nUpload-Metadata: ${encodeMetadata(PDF_FIELD())}\r\nContent-Type: application/offset+octet-stream\r\nContent-Length: 300000\r\n\r\n`,
    );
    socket.write(pdfBytes(100_000));
    // The upload's row is made before its body is read: wait for it, then cut.
    await waitUntil(async () => (await open()) > before, 'the upload created');
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.destroy();
    await waitUntil(async () => (await open()) === before, 'the cut creation gone');
    await waitUntil(async () => (await filesUnder(server.dataDir)).every((f) => files.includes(f)), 'nothing kept of its bytes');
  });
});

describe('the tus extensions', () => {
  it('checksum: a PATCH with a wrong Upload-Checksum is 460 and keeps nothing; a right one is accepted', async () => {
    const data = pdfBytes(200_000);
    const url = await create(data.length);
    const first = data.subarray(0, 120_000);
    expectRefusal(await patch(url, 0, first, { 'Upload-Checksum': checksum('sha1', data.subarray(1, 120_001)) }), 460);
    expect((await tusRequest(server, 'HEAD', url, { token: author.token })).headers.get('upload-offset')).toBe('0');
    expectRefusal(await patch(url, 0, first, { 'Upload-Checksum': 'crc32 AAAAAA==' }), 400);
    // An empty body is checked too: its checksum is that of no bytes.
    expectRefusal(await patch(url, 0, new Uint8Array(0), { 'Upload-Checksum': checksum('sha1', first) }), 460);
    expect((await patch(url, 0, new Uint8Array(0), { 'Upload-Checksum': checksum('sha1', new Uint8Array(0)) })).status).toBe(204);
    const accepted = await patch(url, 0, first, { 'Upload-Checksum': checksum('sha1', first) });
    expect(accepted.status).toBe(204);
    expect(accepted.headers.get('upload-offset')).toBe('120000');
    const rest = data.subarray(120_000);
    const last = await patch(url, 120_000, rest, { 'Upload-Checksum': checksum('sha256', rest) });
    expect(last.status).toBe(204);
    expect(last.headers.get('upload-offset')).toBe(String(data.length));
    expect(last.headers.get('attachment-url')).toBe(pdfUrl(data));
    expect((await readBack(pdfUrl(data))).equals(data)).toBe(true);
  });

  it('lengths and offsets past what a number holds are too large (413) or not where the upload is (409); bytes past a complete upload are 413', async () => {
    const huge = '1000000000000000';
    const post = await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: { 'Upload-Length': huge, 'Upload-Metadata': encodeMetadata(PDF_FIELD()) } });
    expectRefusal(post, 413);
    const data = pdfBytes(50_000);
    const url = await create(data.length);
    expectRefusal(await tusRequest(server, 'PATCH', url, { token: author.token, headers: { 'Upload-Offset': huge }, body: data }), 409);
    expectRefusal(await tusRequest(server, 'PATCH', url, { token: author.token, headers: { 'Upload-Offset': `000${'9'.repeat(400)}` }, body: data }), 409);
    // Leading zeros are the same number.
    expect((await patch(url, 0, new Uint8Array(0), { 'Upload-Offset': '000' })).status).toBe(204);
    const done = await patch(url, 0, data);
    expect(done.status).toBe(204);
    expect(done.headers.get('upload-offset')).toBe(String(data.length));
    // Complete: the same PATCH again without bytes is answered as before; with bytes, they are too many.
    const again = await patch(url, data.length, new Uint8Array(0));
    expect([again.status, again.headers.get('upload-offset')]).toEqual([204, String(data.length)]);
    expectRefusal(await patch(url, data.length, pdfBytes(10)), 413);
    // The same in chunks (Transfer-Encoding: chunked, no Content-Length), written on the socket as
    // fetch would send a stream: an empty body is answered as before, as @tus/server answers it;
    // a byte is too many.
    const chunked = (bytes: Uint8Array) =>
      rawRequest(server.url, [
        `PATCH ${new URL(url, server.url).pathname} HTTP/1.1`,
        `Host: ${new URL(server.url).host}`,
        'Tus-Resumable: 1.0.0',
        `Authorization: Bearer ${author.token}`,
        'Content-Type: application/offset+octet-stream',
        `Upload-Offset: ${data.length}`,
        'Transfer-Encoding: chunked',
        'Connection: close',
        '',
        bytes.length > 0 ? `${bytes.length.toString(16)}\r\n${Buffer.from(bytes).toString('latin1')}\r\n0\r\n\r\n` : '0\r\n\r\n',
      ]);
    const empty = await chunked(new Uint8Array(0));
    expect(empty).toMatch(/^HTTP\/1\.1 204 /);
    expect(empty).toMatch(new RegExp(`\r\nupload-offset: ${data.length}\r\n`, 'i'));
    expect(await chunked(pdfBytes(10))).toMatch(/^HTTP\/1\.1 413 /);
    // A client that goes before its first chunk: no byte came, which is no failure of the server's.
    const aborted = connect(Number(new URL(server.url).port), new URL(server.url).hostname);
    await new Promise<void>((resolve) => aborted.on('connect', resolve));
    aborted.write(
      [`PATCH ${new URL(url, server.url).pathname} HTTP/1.1`, `Host: ${new URL(server.url).host}`, 'Tus-Resumable: 1.0.0', `Authorization: Bearer ${author.token}`, 'Content-Type: application/offset+octet-stream', `Upload-Offset: ${data.length}`, 'Transfer-Encoding: chunked', '', ''].join('\r\n'),
    );
    const before = server.logs.length;
    aborted.destroy();
    await waitUntil(() => server.logs.slice(before).some((line) => line.includes('"method":"PATCH"')), 'logged');
    // A round trip more, for the cut request's handler to have finished.
    expect((await tusRequest(server, 'HEAD', url, { token: author.token })).headers.get('upload-offset')).toBe(String(data.length));
    expect(server.logs.filter((line) => /"level":(50|60)/.test(line))).toEqual([]);
    expect((await tusRequest(server, 'HEAD', url, { token: author.token })).headers.get('upload-offset')).toBe(String(data.length));
    expect((await readBack(pdfUrl(data))).equals(data)).toBe(true);
  });

  it('a creation bringing bytes to an upload of length 0 is 413, and leaves no upload', async () => {
    const empty = `${VENUE}/-/Empty_Notes`;
    const made = await root.post('/invitations', { id: empty, domain: VENUE, form: { notes: { order: 1, value: { param: { type: 'file', extensions: ['txt'] } } } } });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const rows = async () => Number(((await server.service.db('tus_uploads').count({ n: '*' }).first()) as { n: number | string }).n);
    const before = await rows();
    const post = await tusRequest(server, 'POST', '/attachment/tus', {
      token: author.token,
      headers: { 'Upload-Length': '0', 'Upload-Metadata': encodeMetadata(metadataFor(empty, 'notes', 'notes.txt')), 'Content-Type': 'application/offset+octet-stream' },
      body: Buffer.from('ten bytes!'),
    });
    expectRefusal(post, 413);
    expect(await rows()).toBe(before);
  });

  it('termination: abort(true) deletes the upload (204), HEAD and PATCH are then 404, and its bytes are gone', async () => {
    const before = await filesUnder(server.dataDir);
    const opts = options({ chunkSize: 100_000 });
    const upload = await new Promise<tus.Upload>((resolve, reject) => {
      const started: tus.Upload = new tus.Upload(pdfBytes(300_000), {
        ...opts,
        onChunkComplete: () => void started.abort(true).then(() => resolve(started), reject),
        onError: reject,
      });
      started.start();
    });
    expect(lines(opts.httpStack)).toEqual(['POST 201', 'PATCH 204', 'DELETE 204']);
    expect(opts.httpStack.of('DELETE')[0]?.responseHeaders['tus-resumable']).toBe('1.0.0');
    const url = upload.url ?? '';
    const head = await tusRequest(server, 'HEAD', url, { token: author.token });
    expect(head.status).toBe(404);
    expect(head.headers.get('tus-resumable')).toBe('1.0.0');
    expectRefusal(await patch(url, 100_000, pdfBytes(10)), 404);
    await waitUntil(async () => (await filesUnder(server.dataDir)).every((f) => before.includes(f)), 'the terminated upload\'s bytes removed');
  });

  it('a file over the field\'s maxSize is refused at creation (413), before any byte is read', async () => {
    const small = metadataFor(SMALL, 'doc', 'small.pdf');
    const opts = options({ metadata: small });
    const over = await runUpload(pdfBytes(SMALL_MAX + 1), opts);
    expect(statusOf(over)).toBe(413);
    expect(lines(opts.httpStack)).toEqual(['POST 413']);
    expect(JSON.parse(opts.httpStack.exchanges[0]?.responseBody ?? '{}')).toMatchObject({ status: 413, name: 'ValidationError' });
    // Exactly maxSize is fine; past the server's MAX_UPLOAD_MB (Tus-Max-Size) is not, whatever the field says.
    await create(SMALL_MAX, small);
    expectRefusal(await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: { 'Upload-Length': String(4 * MB + 1), 'Upload-Metadata': encodeMetadata(PDF_FIELD()) } }), 413);

    // With creation-with-upload, the answer comes while most of the body is still unsent.
    const before = await filesUnder(server.dataDir);
    const { hostname, port } = new URL(server.url);
    const socket = connect(Number(port), hostname);
    // The server may close the connection on the bytes still coming: that is its right here.
    socket.on('error', () => {});
    const answer = new Promise<string>((resolve) => {
      let text = '';
      socket.on('data', (data: Buffer) => {
        text += data.toString('latin1');
        if (text.includes('\r\n\r\n')) resolve(text);
      });
    });
    socket.write(
      `POST /attachment/tus HTTP/1.1\r\nHost: ${new URL(server.url).host}\r\nAuthorization: Bearer ${author.token}\r\nTus-Resumable: 1.0.0\r\n` +
        `Upload-Length: 3000000\r\nUpload-Metadata: ${encodeMetadata(small)}\r\nContent-Type: application/offset+octet-stream\r\nContent-Length: 3000000\r\n\r\n`,
    );
    socket.write(pdfBytes(64 * 1024));
    const head = await answer;
    socket.destroy();
    expect(head).toMatch(/^HTTP\/1\.1 413 /);
    await waitUntil(async () => (await filesUnder(server.dataDir)).every((f) => before.includes(f)), 'nothing kept of the refused body');

    // A deferred length is checked as the bytes come: past maxSize, or past the length declared.
    const deferred = await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: { 'Upload-Defer-Length': '1', 'Upload-Metadata': encodeMetadata(small) } });
    expect(deferred.status).toBe(201);
    expectRefusal(await patch(deferred.headers.get('location') ?? '', 0, pdfBytes(SMALL_MAX + 1)), 413);
    expectRefusal(await patch(await create(1000), 0, pdfBytes(1001)), 413);
  });
});

describe('expiry (moves the clock: last in this file)', () => {
  it('an upload untouched for UPLOAD_ABANDON_SECONDS is gone; Upload-Expires tells when, and each PATCH moves it', async () => {
    const before = clock.now();
    const res = await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: { 'Upload-Length': '200000', 'Upload-Metadata': encodeMetadata(PDF_FIELD()) } });
    const after = clock.now();
    expect(res.status).toBe(201);
    const created = expiresOf(res.headers.get('upload-expires'));
    expect(created).toBeGreaterThanOrEqual(Math.floor((before + ABANDON_SECONDS * 1000) / 1000) * 1000);
    expect(created).toBeLessThanOrEqual(after + ABANDON_SECONDS * 1000);
    const kept = res.headers.get('location') ?? '';
    const left = await create(200_000);
    const data = pdfBytes(200_000);

    clock.advance(30_000);
    const patched = await patch(kept, 0, data.subarray(0, 50_000));
    expect(patched.status).toBe(204);
    expect(expiresOf(patched.headers.get('upload-expires'))).toBeGreaterThanOrEqual(created + 29_000);

    clock.advance((ABANDON_SECONDS - 30 + 1) * 1000);
    const gone = await tusRequest(server, 'HEAD', left, { token: author.token });
    expect([404, 410]).toContain(gone.status);
    expect([404, 410]).toContain((await patch(left, 0, data.subarray(0, 10))).status);
    const alive = await tusRequest(server, 'HEAD', kept, { token: author.token });
    expect(alive.status).toBe(200);
    expect(alive.headers.get('upload-offset')).toBe('50000');

    // tus-js-client given the expired URL starts a new upload at the endpoint and finishes it.
    const opts = options({ uploadUrl: left });
    const outcome = await runUpload(data, opts);
    expect(outcome.ok, why(outcome)).toBe(true);
    expect(lines(opts.httpStack).slice(0, 2)).toEqual([`HEAD ${gone.status}`, 'POST 201']);
    expect((await readBack(pdfUrl(data))).equals(data)).toBe(true);
  });

  it('a finished upload tells no expiry, and once its time is past its URL is a 404 before any sweep', async () => {
    const data = pdfBytes(120_000);
    const outcome = await runUpload(data, options());
    expect(outcome.ok, why(outcome)).toBe(true);
    const url = outcome.upload.url ?? '';
    const head = await tusRequest(server, 'HEAD', url, { token: author.token });
    expect(head.status).toBe(200);
    expect(head.headers.get('attachment-url')).toBe(pdfUrl(data));
    expect(head.headers.get('upload-expires')).toBeNull();

    clock.advance((ABANDON_SECONDS + 1) * 1000);
    const gone = await tusRequest(server, 'HEAD', url, { token: author.token });
    expect(gone.status).toBe(404);
    expect(gone.headers.get('attachment-url')).toBeNull();
    expect((await readBack(pdfUrl(data))).equals(data)).toBe(true);
  });
});
