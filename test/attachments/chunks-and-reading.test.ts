import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../helpers/clock.ts';
import { cookieHeader } from '../helpers/cookies.ts';
import { Client, sendMultipart } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';
import { waitUntil } from '../helpers/wait.ts';
import { filesUnder, pdfBytes, sendHeldChunk, sha1, SUBMISSION, submissionContent, submitPaper, VENUE, venueWithAuthor } from './helpers.ts';

let server: TestServer;
let author: Client;
let authorId: string;

beforeAll(async () => {
  server = await startServer();
  ({ author, authorId } = await venueWithAuthor(server));
});
afterAll(async () => {
  await server.close();
});

const MB = 1024 * 1024;

function chunk(client: Client, fields: { clientUploadId: string; chunkIndex: number; totalChunks: number; name?: string; invitationId?: string }, data: Uint8Array, filename = 'paper.pdf') {
  return sendMultipart(client, 'PUT', '/attachment/chunk', { name: 'pdf', invitationId: SUBMISSION, ...fields }, { filename, data });
}

function split(data: Buffer, size: number): Buffer[] {
  const parts: Buffer[] = [];
  for (let offset = 0; offset < data.length; offset += size) parts.push(data.subarray(offset, offset + size));
  return parts;
}

describe('chunked upload', () => {
  it('a 50 MB PDF in 5 MB chunks, shuffled, one sent twice and two in parallel, reads back identical', async () => {
    const data = pdfBytes(50 * MB);
    const parts = split(data, 5 * MB);
    expect(parts).toHaveLength(10);
    const order = [3, 7, 0, 9, 5, 1, 8, 2];
    const id = 'big-upload-1';
    for (const index of order) {
      const res = await chunk(author, { clientUploadId: id, chunkIndex: index, totalChunks: 10 }, parts[index] ?? Buffer.alloc(0));
      expect(res.status).toBe(200);
      expect(res.body[String(index)]).toBe('completed');
    }
    // Chunk 3 again: accepted once.
    const retry = await chunk(author, { clientUploadId: id, chunkIndex: 3, totalChunks: 10 }, parts[3] ?? Buffer.alloc(0));
    expect(retry.body).toEqual(Object.fromEntries(Array.from({ length: 10 }, (_, i) => [String(i), [4, 6].includes(i) ? 'missing' : 'completed'])));
    // The last two together (both under way, each held before its last kilobyte, then both let
    // go): both answer the same URL. Sent at once without holding, one could be in and answered
    // before the other's first bytes left a busy client, which is not "together" to any server.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const together = [4, 6].map((index) => sendHeldChunk(author, { name: 'pdf', invitationId: SUBMISSION, clientUploadId: id, chunkIndex: index, totalChunks: 10 }, parts[index]!, released));
    await waitUntil(async () => Number((await server.service.db('upload_arrivals').count({ n: '*' }).first())?.n) === 2, 'both chunks under way');
    release();
    const [a, b] = await Promise.all(together);
    const url = `/pdf/${sha1(data)}.pdf`;
    expect(a?.body).toEqual({ url });
    expect(b?.body).toEqual({ url });
    // A chunk arriving after completion gets the same URL.
    expect((await chunk(author, { clientUploadId: id, chunkIndex: 0, totalChunks: 10 }, parts[0] ?? Buffer.alloc(0))).body).toEqual({ url });
    expect((await filesUnder(server.dataDir)).filter((f) => f.includes('/chunks/'))).toEqual([]);

    const note = await author.post('/notes', { invitation: SUBMISSION, content: submissionContent(authorId, url) });
    expect(note.status).toBe(200);
    const pdf = await fetch(`${server.url}/pdf?id=${note.body.id}`, { headers: { cookie: cookieHeader(author) } });
    expect(pdf.status).toBe(200);
    expect(pdf.headers.get('content-type')).toBe('application/pdf');
    expect(pdf.headers.get('content-length')).toBe(String(50 * MB));
    expect(pdf.headers.get('etag')).toBe(`"${sha1(data)}"`);
    expect(pdf.headers.get('content-disposition')).toBe('inline; filename="Uploaded paper.pdf"');
    expect(sha1(new Uint8Array(await pdf.arrayBuffer()))).toBe(sha1(data));
  }, 120_000);

  it('counts the way the client counts: 1-based indices get a 1-based status map', async () => {
    const data = pdfBytes(3000);
    const parts = split(data, 1000);
    const first = await chunk(author, { clientUploadId: 'one-based', chunkIndex: 3, totalChunks: 3 }, parts[2] ?? Buffer.alloc(0));
    expect(first.body).toEqual({ 1: 'missing', 2: 'missing', 3: 'completed' });
    await chunk(author, { clientUploadId: 'one-based', chunkIndex: 1, totalChunks: 3 }, parts[0] ?? Buffer.alloc(0));
    const done = await chunk(author, { clientUploadId: 'one-based', chunkIndex: 2, totalChunks: 3 }, parts[1] ?? Buffer.alloc(0));
    expect(done.body).toEqual({ url: `/pdf/${sha1(data)}.pdf` });
  });

  it('refuses an upload that counts from 0 and from 1', async () => {
    await chunk(author, { clientUploadId: 'mixed', chunkIndex: 0, totalChunks: 2 }, pdfBytes(100));
    const res = await chunk(author, { clientUploadId: 'mixed', chunkIndex: 2, totalChunks: 2 }, pdfBytes(100));
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual({ path: 'chunkIndex', reqId: expect.any(String) });
  });

  it.each([
    ['a 26-character clientUploadId', { clientUploadId: 'x'.repeat(26), chunkIndex: 0, totalChunks: 1 }, 'clientUploadId'],
    ['chunkIndex -1', { clientUploadId: 'neg', chunkIndex: -1, totalChunks: 1 }, 'chunkIndex'],
    ['totalChunks 0', { clientUploadId: 'zero', chunkIndex: 0, totalChunks: 0 }, 'totalChunks'],
    ['a chunkIndex past totalChunks', { clientUploadId: 'past', chunkIndex: 5, totalChunks: 2 }, 'chunkIndex'],
  ])('refuses %s with a 400, keeping nothing', async (_what, fields, field) => {
    const before = await filesUnder(server.dataDir);
    const res = await chunk(author, fields, pdfBytes(100));
    expect(res.status).toBe(400);
    const reasons = res.body.errors ?? [res.body];
    expect(reasons).toContainEqual(expect.objectContaining({ details: expect.objectContaining({ path: field }) }));
    expect(await filesUnder(server.dataDir)).toEqual(before);
  });

  it('refuses a change of totalChunks or name within one upload', async () => {
    await chunk(author, { clientUploadId: 'steady', chunkIndex: 0, totalChunks: 3 }, pdfBytes(100));
    expect((await chunk(author, { clientUploadId: 'steady', chunkIndex: 1, totalChunks: 4 }, pdfBytes(100))).status).toBe(400);
  });

  it('refuses, as soon as the chunks exceed it, a total over maxSize, and drops the upload', async () => {
    const root = (await loggedIn(server, (await createActiveUser(server, { role: 'superuser' })).email)).client;
    await root.post('/invitations', {
      id: `${VENUE}/-/Tiny`,
      domain: VENUE,
      form: { doc: { order: 1, value: { param: { type: 'file', extensions: ['pdf'], maxSize: 0.004 } } } },
    });
    const chunkDirs = async () => (await filesUnder(server.dataDir)).filter((f) => f.includes('/chunks/'));
    const before = await chunkDirs();
    const send = (index: number) =>
      chunk(author, { clientUploadId: 'too-big', chunkIndex: index, totalChunks: 3, name: 'doc', invitationId: `${VENUE}/-/Tiny` }, pdfBytes(2000));
    expect((await send(0)).status).toBe(200);
    expect((await send(1)).status).toBe(200);
    const third = await send(2);
    expect(third.status).toBe(413);
    expect(await chunkDirs()).toEqual(before);
    expect(await server.service.db('chunked_uploads').where({ client_upload_id: 'too-big' })).toEqual([]);
  });

  it('takes a chunk sent again as a retry, even when counting it twice would pass maxSize', async () => {
    const root = (await loggedIn(server, (await createActiveUser(server, { role: 'superuser' })).email)).client;
    const invitationId = `${VENUE}/-/Tiny_Retries`;
    await root.post('/invitations', { id: invitationId, domain: VENUE, form: { doc: { order: 1, value: { param: { type: 'file', extensions: ['pdf'], maxSize: 0.004 } } } } });
    const parts = [pdfBytes(2000), pdfBytes(2000), pdfBytes(100)];
    const send = (index: number) => chunk(author, { clientUploadId: 'retried', chunkIndex: index, totalChunks: 3, name: 'doc', invitationId }, parts[index]!);
    expect((await send(0)).status).toBe(200);
    expect((await send(1)).status).toBe(200);
    // 4,000 bytes received of 4,194 allowed: the first chunk again is the same chunk, not 2,000 more.
    const again = await send(0);
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ 0: 'completed', 1: 'completed', 2: 'missing' });
    expect(await server.service.db('chunked_uploads').where({ client_upload_id: 'retried' }).first('received_bytes')).toMatchObject({ received_bytes: 4000 });
    const last = await send(2);
    expect(last.body).toEqual({ url: expect.stringMatching(/^\/pdf\/[0-9a-f]{40}\.pdf$/) });
  });

  it('sweeps away uploads abandoned for longer than configured', async () => {
    const clock = new TestClock();
    const quick = await startServer({ UPLOAD_ABANDON_SECONDS: '1' }, undefined, { now: clock.now });
    try {
      const { author: client } = await venueWithAuthor(quick);
      await chunk(client, { clientUploadId: 'left-behind', chunkIndex: 0, totalChunks: 2 }, pdfBytes(500));
      expect((await filesUnder(quick.dataDir)).some((f) => f.includes('/chunks/'))).toBe(true);
      clock.advance(1100);
      expect(await quick.service.services.chunkedUploads.sweep()).toBe(1);
      expect((await filesUnder(quick.dataDir)).filter((f) => f.includes('/chunks/'))).toEqual([]);
      expect(await quick.service.db('chunked_uploads')).toEqual([]);
    } finally {
      await quick.close();
    }
  });
});

describe('reading files back', () => {
  let noteId: string;
  let data: Buffer;

  beforeAll(async () => {
    data = pdfBytes(100_000);
    noteId = (await submitPaper(author, authorId, data)).note.body.id;
  });

  it('serves ranges, and answers 304 to a matching ETag', async () => {
    const part = await fetch(`${server.url}/attachment?id=${noteId}&name=pdf`, { headers: { cookie: cookieHeader(author), range: 'bytes=0-9' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 0-9/${data.length}`);
    expect(Buffer.from(await part.arrayBuffer())).toEqual(data.subarray(0, 10));
    // fetch adds `Cache-Control: no-cache` to a conditional request unless told otherwise.
    const cached = await fetch(`${server.url}/pdf?id=${noteId}`, {
      headers: { cookie: cookieHeader(author), 'if-none-match': `"${sha1(data)}"`, 'cache-control': 'max-age=0' },
    });
    expect(cached.status).toBe(304);
  });

  it('a suffix longer than the file is the whole file; a range past its end is 416 naming its size (RFC 9110 §14.1.3, §15.5.17)', async () => {
    const headers = (range: string) => ({ headers: { cookie: cookieHeader(author), range } });
    for (const path of [`/pdf?id=${noteId}`, `/attachment?id=${noteId}&name=pdf`]) {
      const whole = await fetch(server.url + path, headers(`bytes=-${data.length * 3}`));
      expect(whole.status).toBe(206);
      expect(whole.headers.get('content-range')).toBe(`bytes 0-${data.length - 1}/${data.length}`);
      expect(Buffer.from(await whole.arrayBuffer())).toEqual(data);
      const outside = await fetch(server.url + path, headers(`bytes=${data.length}-`));
      expect(outside.status).toBe(416);
      expect(outside.headers.get('content-range')).toBe(`bytes */${data.length}`);
      expect(await outside.json()).toMatchObject({ status: 416, name: 'RangeNotSatisfiableError' });
    }
  });

  it('a note the caller may not read is 403; a missing note or field is 404', async () => {
    const stranger = (await loggedIn(server, (await createActiveUser(server)).email)).client;
    expect((await stranger.get(`/pdf?id=${noteId}`)).status).toBe(403);
    expect((await new Client(server.url).get(`/attachment?id=${noteId}&name=pdf`)).status).toBe(403);
    expect((await author.get('/pdf?id=NoSuchNote')).body).toMatchObject({ status: 404, name: 'NotFoundError' });
    expect((await author.get(`/attachment?id=${noteId}&name=supplementary_material`)).body).toMatchObject({ status: 404, name: 'NotFoundError' });
    expect((await author.get(`/attachment?id=${noteId}&name=../../etc`)).status).toBe(400);
  });

  it('ids= answers a zip, with the readers checked for each', async () => {
    const zip = await fetch(`${server.url}/attachment?ids=${noteId}&ids=${noteId}&name=pdf`, { headers: { cookie: cookieHeader(author) } });
    expect(zip.status).toBe(200);
    expect(zip.headers.get('content-type')).toBe('application/zip');
    const bytes = Buffer.from(await zip.arrayBuffer());
    expect(bytes.subarray(0, 4)).toEqual(Buffer.from('PK\u0003\u0004', 'latin1'));
    const stranger = (await loggedIn(server, (await createActiveUser(server)).email)).client;
    expect((await stranger.get(`/pdf?ids=${noteId}`)).status).toBe(403);
  });

  it('compares two revisions of the PDF side by side', async () => {
    const second = pdfBytes(2000);
    const { body } = await sendMultipart(author, 'PUT', '/attachment', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'v2.pdf', data: second });
    await author.post('/notes', { id: noteId, invitation: SUBMISSION, content: { pdf: { value: body.url } } });
    const edits = (await author.get(`/notes/edits?note.id=${noteId}`)).body.edits;
    const [left, right] = edits;
    const res = await author.get(`/pdf/compare?noteId=${noteId}&leftId=${left.id}&rightId=${right.id}&field=pdf`);
    expect(res.status).toBe(200);
    expect(res.body.leftNote.content.pdf.value).toBe(`/pdf/${sha1(data)}.pdf`);
    expect(res.body.rightNote.content.pdf.value).toBe(body.url);
    const page = await fetch(res.body.viewerUrl, { headers: { cookie: cookieHeader(author) } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(`src="/pdf/${sha1(data)}.pdf"`);
    expect(html).toContain(`src="${body.url}"`);
    // Our own files framed, our own stylesheet, nothing inline.
    expect(page.headers.get('content-security-policy')).toMatch(/default-src 'none'.*frame-src 'self'/);
    expect(html).toMatch(/<link rel="stylesheet" href="\/assets\/compare\.[0-9a-f]{16}\.css">/);
    expect(html).not.toContain('<style');
    // The earlier PDF stays readable to the note's readers.
    expect((await fetch(`${server.url}/pdf/${sha1(data)}.pdf`, { headers: { cookie: cookieHeader(author) } })).status).toBe(200);
    const stranger = (await loggedIn(server, (await createActiveUser(server)).email)).client;
    expect((await stranger.get(`/pdf/compare?noteId=${noteId}&leftId=${left.id}&rightId=${right.id}`)).status).toBe(404);
  });
});
