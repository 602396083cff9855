/**
 * Issue 29, continued from `tus.test.ts`: the tus protocol's own rules on `/attachment/tus`,
 * sent as raw requests (OPTIONS and CORS, creation, offsets, termination, what is refused and
 * how), whose upload a URL is, and an upload a stopped process kept. The server is reached
 * directly here; `tus.test.ts` puts a TCP line in front of it to cut connections.
 */
import { randomUUID } from 'node:crypto';
import { decodeJwt } from 'jose';
import * as tus from 'tus-js-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROCESS_OWNER } from '../../server/attachments/owners.ts';
import { TestClock } from '../helpers/clock.ts';
import { runningMark } from '../helpers/marks.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { loggedIn } from '../helpers/users.ts';
import { waitUntil } from '../helpers/wait.ts';
import { pdfBytes, sha1, SUBMISSION, venueWithAuthor } from './helpers.ts';
import {
  encodeMetadata,
  expectRefusal,
  metadataFor,
  pathOf,
  rawRequest,
  RecordingHttpStack,
  runUpload,
  signedInPerson,
  TUS_EXTENSIONS,
  tusCalls,
  tusRequest,
  type Outcome,
  type Person,
} from './tus-helpers.ts';

const MB = 1024 * 1024;
const ABANDON_SECONDS = 60;

const clock = new TestClock();
let server: TestServer;
let author: Person;
let stranger: Person;

beforeAll(async () => {
  server = await startServer({ UPLOAD_ABANDON_SECONDS: String(ABANDON_SECONDS), UPLOAD_HUMAN_VERIFICATION_AFTER: '0', MAX_UPLOAD_MB: '4' }, undefined, { now: clock.now });
  await venueWithAuthor(server);
  author = await signedInPerson(server);
  stranger = await signedInPerson(server, 'Someone Else');
});
afterAll(async () => {
  await server?.close();
});

const PDF_FIELD = () => metadataFor(SUBMISSION, 'pdf', 'paper.pdf');
const { create, patch, readBack } = tusCalls(() => ({ server, author }));

/** tus-js-client's options as a frontend sets them; no retries (a failure shows). */
function options(extra: Partial<tus.UploadOptions> = {}, person: Person = author): tus.UploadOptions & { httpStack: RecordingHttpStack } {
  return { endpoint: `${server.url}/attachment/tus`, headers: { Authorization: `Bearer ${person.token}` }, metadata: PDF_FIELD(), retryDelays: null, httpStack: new RecordingHttpStack(), ...extra } as tus.UploadOptions & { httpStack: RecordingHttpStack };
}

/** What went wrong, for an assertion's message. */
const why = (outcome: Outcome) => (outcome.ok ? 'ok' : String(outcome.error));
const pdfUrl = (data: Uint8Array) => `/pdf/${sha1(data)}.pdf`;

describe('whose upload it is', () => {
  it('another person\'s token gets 404 on the upload\'s URL; a refreshed token, and a new session of the same person, carry on', async () => {
    const owner = await signedInPerson(server, 'Upload Owner');
    const data = pdfBytes(300_000);
    /** Sends one more chunk of 100 kB with the owner's current token, then stops (as a page closed). */
    const oneChunk = (url: string | null) =>
      new Promise<string>((resolve, reject) => {
        const upload: tus.Upload = new tus.Upload(data, {
          ...options({ chunkSize: 100_000, ...(url ? { uploadUrl: url } : {}) }, owner),
          onChunkComplete: () => void upload.abort().then(() => resolve(upload.url ?? '')),
          onError: reject,
        });
        upload.start();
      });
    const url = await oneChunk(null);

    expect((await tusRequest(server, 'HEAD', url, { token: stranger.token })).status).toBe(404);
    expectRefusal(await patch(url, 100_000, data.subarray(100_000, 200_000), {}, stranger), 404);
    expectRefusal(await tusRequest(server, 'DELETE', url, { token: stranger.token }), 404);
    expect((await tusRequest(server, 'HEAD', url, { token: owner.token })).headers.get('upload-offset')).toBe('100000');

    const refreshed = await owner.client.post('/refreshToken');
    expect(refreshed.status).toBe(200);
    const firstToken = owner.token;
    owner.token = refreshed.body.token;
    expect(await oneChunk(url)).toBe(url);
    expect((await tusRequest(server, 'HEAD', url, { token: owner.token })).headers.get('upload-offset')).toBe('200000');

    // Signed out, and in again: another session, the same person.
    expect((await owner.client.post('/logout')).status).toBe(200);
    owner.token = (await loggedIn(server, owner.email)).token;
    expect(decodeJwt(owner.token).sid).not.toBe(decodeJwt(firstToken).sid);
    const done = await runUpload(data, options({ uploadUrl: url }, owner));
    expect(done.ok, why(done)).toBe(true);
    expect(done.ok && done.lastResponse.getHeader('Attachment-Url')).toBe(pdfUrl(data));
    expect((await readBack(pdfUrl(data), owner)).equals(data)).toBe(true);
  });
});

describe('the protocol', () => {
  it('OPTIONS answers the server\'s tus capabilities, and the CORS a browser page needs', async () => {
    const res = await fetch(`${server.url}/attachment/tus`, { method: 'OPTIONS' });
    expect(res.status).toBe(204);
    expect(Object.fromEntries(['tus-resumable', 'tus-version', 'tus-extension', 'tus-max-size', 'tus-checksum-algorithm'].map((h) => [h, res.headers.get(h)]))).toEqual({
      'tus-resumable': '1.0.0',
      'tus-version': '1.0.0',
      'tus-extension': TUS_EXTENSIONS,
      'tus-max-size': String(4 * MB),
      'tus-checksum-algorithm': 'sha1,sha256,md5',
    });
    const asked = ['authorization', 'content-type', 'tus-resumable', 'upload-length', 'upload-defer-length', 'upload-metadata', 'upload-offset', 'upload-checksum', 'upload-concat'];
    const url = await create(1000);
    // A browser asks before POST on the endpoint and before PATCH, HEAD and DELETE on the upload's URL.
    for (const [target, method] of [['/attachment/tus', 'POST'], [new URL(url).pathname, 'PATCH']] as const) {
      const preflight = await fetch(server.url + target, {
        method: 'OPTIONS',
        headers: { origin: 'https://app.example.org', 'access-control-request-method': method, 'access-control-request-headers': asked.join(',') },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
      expect(preflight.headers.get('access-control-allow-methods')?.toUpperCase()).toContain(method);
      const allowed = (preflight.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/\s*,\s*/);
      expect(asked.filter((h) => !allowed.includes(h))).toEqual([]);
    }
    const head = await tusRequest(server, 'HEAD', url, { token: author.token, headers: { Origin: 'https://app.example.org' } });
    const exposed = (head.headers.get('access-control-expose-headers') ?? '').toLowerCase().split(/\s*,\s*/);
    expect(['location', 'upload-offset', 'upload-length', 'upload-expires', 'attachment-url', 'tus-resumable'].filter((h) => !exposed.includes(h))).toEqual([]);
  });

  it('a request without Tus-Resumable, or with another version, is 412 with Tus-Version', async () => {
    const headers = { 'Upload-Length': '1000', 'Upload-Metadata': encodeMetadata(PDF_FIELD()) };
    for (const version of [null, '0.2.2']) {
      const res = await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: { ...headers, 'Tus-Resumable': version } });
      expectRefusal(res, 412);
      expect(res.headers.get('tus-version')).toBe('1.0.0');
    }
    const url = await create(1000);
    const res = await tusRequest(server, 'PATCH', url, { token: author.token, headers: { 'Tus-Resumable': '0.2.2', 'Upload-Offset': '0' }, body: pdfBytes(10) });
    expectRefusal(res, 412);
    expect((await tusRequest(server, 'HEAD', url, { token: author.token })).headers.get('upload-offset')).toBe('0');
  });

  it('protocol errors are tus\'s statuses with the Error body: no session, unknown upload, wrong offset, wrong content type', async () => {
    const headers = { 'Upload-Length': '1000', 'Upload-Metadata': encodeMetadata(PDF_FIELD()) };
    expectRefusal(await tusRequest(server, 'POST', '/attachment/tus', { headers }), 401);
    const unknown = '/attachment/tus/no-such-upload';
    expect((await tusRequest(server, 'HEAD', unknown, { token: author.token })).status).toBe(404);
    expectRefusal(await patch(unknown, 0, pdfBytes(10)), 404);
    const url = await create(1000);
    expectRefusal(await patch(url, 10, pdfBytes(10)), 409);
    expectRefusal(await patch(url, 0, pdfBytes(10), { 'Content-Type': 'application/octet-stream' }), 415);
    expect((await tusRequest(server, 'HEAD', url, { token: author.token })).headers.get('upload-offset')).toBe('0');
  });

  it('a PATCH with tus\'s Content-Type and no body at all (no Content-Length) is answered its offset, as @tus/server answers; with another type, 415', async () => {
    const url = await create(1000);
    const bodiless = (type: string) =>
      rawRequest(server.url, [`PATCH ${pathOf(url)} HTTP/1.1`, 'Host: x', `Authorization: Bearer ${author.token}`, 'Tus-Resumable: 1.0.0', 'Upload-Offset: 0', `Content-Type: ${type}`, 'Connection: close', '', '']);
    const answered = await bodiless('Application/Offset+Octet-Stream; charset=binary');
    expect(answered.slice(0, 12)).toBe('HTTP/1.1 204');
    expect(answered).toMatch(/\r\nUpload-Offset: 0\r\n/i);
    expect((await bodiless('application/octet-stream')).slice(0, 12)).toBe('HTTP/1.1 415');
  });

  it('Upload-Metadata that is not "key base64value" pairs is 400 and creates nothing; spaces around a comma pass, as tusd lets them', async () => {
    const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
    const good = `invitation ${b64(SUBMISSION)},name ${b64('pdf')}`;
    const unpadded = b64('paper1.pdf').replace(/=+$/, '');
    expect(unpadded.length % 4).not.toBe(0);
    const tusUploadCount = async () => Number(((await server.service.db('tus_uploads').count({ n: '*' }).first()) as { n: number | string }).n);
    const before = await tusUploadCount();
    for (const metadata of [
      `${good},filename ${unpadded}`,
      `${good},filename ${b64('paper.pdf')},name ${b64('pdf')}`,
      `${good},filename ${b64('paper.pdf')} extra`,
      `${good},filename p@per.pdf`,
      `${good},file name ${b64('paper.pdf')}`,
    ]) {
      const res = await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: { 'Upload-Length': '1000', 'Upload-Metadata': metadata } });
      expectRefusal(res, 400);
    }
    expect(await tusUploadCount()).toBe(before);
    const spaced = await tusRequest(server, 'POST', '/attachment/tus', {
      token: author.token,
      headers: { 'Upload-Length': '1000', 'Upload-Metadata': `invitation ${b64(SUBMISSION)}, name ${b64('pdf')} ,filename ${b64('paper.pdf')},` },
    });
    expect(spaced.status).toBe(201);
    expect((await tusRequest(server, 'DELETE', spaced.headers.get('location')!, { token: author.token })).status).toBe(204);
  });

  it('a length once known does not change (creation-defer-length); the same value again is no change', async () => {
    const deferred = await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: { 'Upload-Defer-Length': '1', 'Upload-Metadata': encodeMetadata(PDF_FIELD()) } });
    expect(deferred.status).toBe(201);
    const url = deferred.headers.get('location') ?? '';
    const data = pdfBytes(100);
    expect((await patch(url, 0, data.subarray(0, 30), { 'Upload-Length': '100' })).status).toBe(204);
    expectRefusal(await patch(url, 30, data.subarray(30, 60), { 'Upload-Length': '90' }), 400);
    expect((await tusRequest(server, 'HEAD', url, { token: author.token })).headers.get('upload-offset')).toBe('30');
    expect((await patch(url, 30, data.subarray(30), { 'Upload-Length': '100' })).status).toBe(204);
    const known = await create(1000);
    expectRefusal(await patch(known, 0, pdfBytes(10), { 'Upload-Length': '999' }), 400);
  });

  it('a method override is refused as a tus answer, which a browser page can read', async () => {
    const url = await create(1000);
    const refused = await tusRequest(server, 'POST', url, { token: author.token, headers: { 'X-HTTP-Method-Override': 'PATCH', 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' }, body: pdfBytes(10) });
    expectRefusal(refused, 400);
    expect(refused.headers.get('access-control-allow-origin')).toBe('*');
    expect((await tusRequest(server, 'HEAD', url, { token: author.token })).headers.get('upload-offset')).toBe('0');
    // The router ignores letter case, and so does this refusal.
    expectRefusal(await tusRequest(server, 'POST', url.replace('/attachment/tus/', '/ATTACHMENT/TUS/'), { token: author.token, headers: { 'X-HTTP-Method-Override': 'DELETE' } }), 400);
  });

  it.each([
    ['an unknown invitation', metadataFor('Nowhere/-/X', 'pdf', 'p.pdf')],
    ['a field that is not a file field', metadataFor(SUBMISSION, 'title', 'p.pdf')],
    ['an extension the field does not allow', metadataFor(SUBMISSION, 'pdf', 'virus.exe')],
    ['no metadata', {}],
  ])('a creation for %s is refused with 400 and the Error body', async (_what, metadata) => {
    const headers: Record<string, string> = { 'Upload-Length': '1000' };
    if (Object.keys(metadata).length > 0) headers['Upload-Metadata'] = encodeMetadata(metadata);
    expectRefusal(await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers }), 400);
  });
});

describe('a process stopped while it kept a complete upload', () => {
  it("leaves it to the next HEAD at once, not after the dead writer's lease runs out", async () => {
    const data = pdfBytes(150_000);
    const res = await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: { 'Upload-Defer-Length': '1', 'Upload-Metadata': encodeMetadata(PDF_FIELD()) } });
    expect(res.status).toBe(201);
    const url = res.headers.get('location') ?? '';
    expect((await patch(url, 0, data)).status).toBe(204);
    // The row as a process leaves it when it stops after the last byte, keeping the file: the
    // length known, every byte in, no URL yet, and its lease (a pid no process has, of this machine).
    const id = url.split('/').pop() ?? '';
    await server.service.db('tus_uploads').where({ id }).update({ upload_length: data.length, writer: `${randomUUID()} 2147483646.${randomUUID()}.${PROCESS_OWNER.split('.')[2]}`, writer_until: clock.now() + 30_000 });
    const head = await tusRequest(server, 'HEAD', url, { token: author.token });
    expect(head.status).toBe(200);
    expect(head.headers.get('upload-offset')).toBe(String(data.length));
    expect(head.headers.get('attachment-url')).toBe(pdfUrl(data));
    expect((await readBack(pdfUrl(data))).equals(data)).toBe(true);
  });

  it("is waited for while a process of another pid space holds it (its mark held), and taken over at once when that process stops (a restarted container)", async () => {
    const data = pdfBytes(140_000);
    const res = await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: { 'Upload-Length': String(data.length), 'Upload-Metadata': encodeMetadata(PDF_FIELD()) } });
    const url = res.headers.get('location') ?? '';
    expect((await patch(url, 0, data.subarray(0, 70_000))).status).toBe(204);
    // Its lease held by pid 1 of another pid namespace of this kernel, as a container's server is.
    const tag = PROCESS_OWNER.split('.')[2] === 'abcdef01' ? 'abcdef02' : 'abcdef01';
    const id = url.split('/').pop() ?? '';
    const theirs = randomUUID();
    await server.service.db('tus_uploads').where({ id }).update({ writer: `${randomUUID()} 1.${theirs}.${tag}`, writer_until: clock.now() + 30_000 });
    const running = await runningMark(server.dataDir, tag, 1, theirs);
    try {
      expect((await patch(url, 70_000, data.subarray(70_000))).status).toBe(423);
    } finally {
      await running.stop();
    }
    expect((await patch(url, 70_000, data.subarray(70_000))).status).toBe(204);
    const head = await tusRequest(server, 'HEAD', url, { token: author.token });
    expect(head.headers.get('attachment-url')).toBe(pdfUrl(data));
  });

  it("a final upload's file is kept by the client's repeated POST at once, a stopped process's lease on it taken over", async () => {
    const data = pdfBytes(160_000);
    const parts: string[] = [];
    for (const piece of [data.subarray(0, 70_000), data.subarray(70_000)]) {
      const res = await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: { 'Upload-Concat': 'partial', 'Upload-Length': String(piece.length), 'Upload-Metadata': encodeMetadata(PDF_FIELD()) } });
      expect(res.status).toBe(201);
      const url = res.headers.get('location') ?? '';
      expect((await patch(url, 0, piece)).status).toBe(204);
      parts.push(url);
    }
    const final = { 'Upload-Concat': `final;${parts.join(' ')}`, 'Upload-Metadata': encodeMetadata(PDF_FIELD()) };
    // The first try is cut while the file is kept (the disk fails once), as a process stopping
    // there would cut it; then the row is left as that process leaves it: its lease, a pid no
    // process has, of this machine.
    const store = server.service.services.uploads.store;
    const keep = store.keepAssembled.bind(store);
    store.keepAssembled = async () => {
      store.keepAssembled = keep;
      throw new Error('the disk failed');
    };
    expect((await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: final })).status).toBe(500);
    const row = await server.service.db('tus_uploads').where({ concat: 'final', concat_header: final['Upload-Concat'] }).first();
    expect(row).toMatchObject({ url: null, upload_offset: data.length, writer: null });
    await server.service.db('tus_uploads').where({ id: row.id }).update({ writer: `${randomUUID()} 2147483646.${randomUUID()}.${PROCESS_OWNER.split('.')[2]}`, writer_until: clock.now() + 30_000 });

    const again = await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: final });
    expect(again.status).toBe(201);
    expect(again.headers.get('location')).toMatch(new RegExp(`/attachment/tus/${row.id}$`));
    expect(again.headers.get('attachment-url')).toBe(pdfUrl(data));
    expect((await readBack(pdfUrl(data))).equals(data)).toBe(true);
    // The parts went with the file kept.
    for (const url of parts) expect((await tusRequest(server, 'HEAD', url, { token: author.token })).status).toBe(404);
  });

  it('final POSTs sent at once answer one final upload: one row, one Location, every answer 201', async () => {
    const data = pdfBytes(150_000);
    const parts: string[] = [];
    for (const piece of [data.subarray(0, 60_000), data.subarray(60_000)]) {
      const res = await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: { 'Upload-Concat': 'partial', 'Upload-Length': String(piece.length), 'Upload-Metadata': encodeMetadata(PDF_FIELD()) } });
      const url = res.headers.get('location') ?? '';
      expect((await patch(url, 0, piece)).status).toBe(204);
      parts.push(url);
    }
    const final = { 'Upload-Concat': `final;${parts.join(' ')}`, 'Upload-Metadata': encodeMetadata(PDF_FIELD()) };
    const finalsBefore = Number(((await server.service.db('tus_uploads').where({ concat: 'final' }).count({ n: '*' }).first()) as { n: number | string }).n);
    // The same parts named by their paths rather than their URLs: the same final upload.
    const byPath = { ...final, 'Upload-Concat': `final;${parts.map(pathOf).join(' ')}` };
    const answers = await Promise.all([final, final, byPath, final, byPath].map((headers) => tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers })));
    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 201, 201, 201]);
    expect(new Set(answers.map((answer) => answer.headers.get('location'))).size).toBe(1);
    const rows = async (table: string, where: Record<string, string>) => Number(((await server.service.db(table).where(where).count({ n: '*' }).first()) as { n: number | string }).n);
    expect(await rows('tus_uploads', { concat: 'final' }) - finalsBefore).toBe(1);
    const url = answers[0]?.headers.get('location') ?? '';
    await waitUntil(async () => (await tusRequest(server, 'HEAD', url, { token: author.token })).headers.get('attachment-url') === pdfUrl(data), 'kept');
    expect((await readBack(pdfUrl(data))).equals(data)).toBe(true);
    expect(await rows('uploads', { url: pdfUrl(data) })).toBe(1);
  });
});
