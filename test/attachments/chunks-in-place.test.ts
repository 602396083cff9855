/**
 * On the local disk, an upload's chunks are written in place into one data file as they arrive
 * (`LocalFileStore`): the first chunk becomes the data file and sets the stride, every later one
 * goes to `(index − first) × stride`, each index claimed by one request at a time, and a chunk is
 * stored only once its marker names it. Whatever is cut, sent twice at once or out of order, the
 * stored file must be the bytes of the first stored copy of each chunk, under their SHA-1.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { lstat, readdir, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cookieHeader } from '../helpers/cookies.ts';
import { Client, sendMultipart } from '../helpers/http.ts';
import { PROCESS_OWNER } from '../../server/attachments/owners.ts';
import { startServer, tempDir, type TestServer } from '../helpers/server.ts';
import { filesUnder, pdfBytes, sendHeldChunk, sha1, SUBMISSION, temporaryFiles, VENUE, venueWithAuthor } from './helpers.ts';

const KB = 1024;

type Fields = { clientUploadId: string; chunkIndex: number; totalChunks: number };
const fieldsOf = (fields: Fields) => ({ name: 'pdf', invitationId: SUBMISSION, ...fields });
const chunk = (client: Client, fields: Fields, data: Uint8Array) =>
  sendMultipart(client, 'PUT', '/attachment/chunk', fieldsOf(fields), { filename: 'paper.pdf', data });

/** `data` cut into `count` pieces of `size` bytes, the last one shorter by `short`. */
function cut(data: Buffer, size: number, count: number): Buffer[] {
  return Array.from({ length: count }, (_, i) => data.subarray(i * size, Math.min(data.length, (i + 1) * size)));
}

/**
 * `PUT /attachment/chunk` whose connection is cut once `sent` bytes of the file part are out:
 * the server has the fields and part of the bytes, then the client is gone.
 */
async function sendCutChunk(client: Client, fields: Fields, data: Uint8Array, sent: number): Promise<void> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fieldsOf(fields))) form.append(name, String(value));
  form.append('file', new Blob([data]), 'paper.pdf');
  const encoded = new Response(form);
  const body = Buffer.from(await encoded.arrayBuffer());
  const fileStart = body.indexOf(Buffer.from(data.subarray(0, 32)));
  const headers = { 'content-type': encoded.headers.get('content-type') ?? '', 'content-length': String(body.length), cookie: cookieHeader(client) };
  await new Promise<void>((resolve) => {
    const req = request(`${client.url}/attachment/chunk`, { method: 'PUT', headers, agent: false });
    req.on('error', () => resolve());
    req.on('close', () => resolve());
    req.write(body.subarray(0, fileStart + sent), () => {
      // Long enough for the server to have written what it got.
      setTimeout(() => req.destroy(), 300);
    });
  });
}

describe('chunks written in place into their upload’s data file', () => {
  let server: TestServer;
  let author: Client;
  let root: Client;

  beforeAll(async () => {
    server = await startServer();
    ({ author, root } = await venueWithAuthor(server));
  });
  afterAll(async () => {
    await server.close();
  });

  const chunksDir = () => path.join(server.dataDir, 'chunks');
  /** The one upload folder that holds something (earlier tests' are gone once their uploads are done). */
  async function uploadDir(): Promise<string> {
    const names = await readdir(chunksDir());
    expect(names).toHaveLength(1);
    return path.join(chunksDir(), names[0]!);
  }
  /** Each stored chunk of the upload: where its bytes are (`in-place:<position>:<size>`), or `apart`. */
  async function stored(dir: string): Promise<Record<string, string>> {
    const found: Record<string, string> = {};
    for (const name of await readdir(dir)) {
      if (!/^\d+$/.test(name)) continue;
      const info = await lstat(path.join(dir, name));
      found[name] = info.isSymbolicLink() ? await readlink(path.join(dir, name)) : 'apart';
    }
    return found;
  }
  async function readBack(url: string): Promise<Buffer> {
    const res = await fetch(`${server.url}${url}`, { headers: { cookie: cookieHeader(author) } });
    expect(res.status).toBe(200);
    return Buffer.from(await res.arrayBuffer());
  }

  it('sent in order, each chunk goes to its place and the data file becomes the stored file', async () => {
    const size = 64 * KB;
    const data = pdfBytes(4 * size - 100);
    const parts = cut(data, size, 4);
    for (const index of [0, 1, 2]) expect((await chunk(author, { clientUploadId: 'in-order', chunkIndex: index, totalChunks: 4 }, parts[index]!)).status).toBe(200);
    const dir = await uploadDir();
    expect(await stored(dir)).toEqual({ 0: `in-place:0:${size}`, 1: `in-place:${size}:${size}`, 2: `in-place:${2 * size}:${size}` });
    expect(await readlink(path.join(dir, 'layout'))).toBe(`0:${size}`);
    // Nothing else: no claim left, no chunk file apart, nothing being received.
    expect((await filesUnder(server.dataDir)).map((f) => path.relative(server.dataDir, f))).toEqual([path.join(path.relative(server.dataDir, dir), 'data')]);
    const done = await chunk(author, { clientUploadId: 'in-order', chunkIndex: 3, totalChunks: 4 }, parts[3]!);
    expect(done.body).toEqual({ url: `/pdf/${sha1(data)}.pdf` });
    expect(await readBack(done.body.url)).toEqual(data);
    expect(await readdir(chunksDir())).toEqual([]);
    expect((await filesUnder(server.dataDir)).map((f) => path.relative(server.dataDir, f))).toEqual([path.join('files', 'pdf', `${sha1(data)}.pdf`)]);
  });

  it('counted from 1, as the web clients count, the chunks go in place too', async () => {
    const size = 32 * KB;
    const data = pdfBytes(3 * size - 7);
    const parts = cut(data, size, 3);
    for (const index of [1, 2]) expect((await chunk(author, { clientUploadId: 'from-one', chunkIndex: index, totalChunks: 3 }, parts[index - 1]!)).status).toBe(200);
    expect(await stored(await uploadDir())).toEqual({ 1: `in-place:0:${size}`, 2: `in-place:${size}:${size}` });
    const done = await chunk(author, { clientUploadId: 'from-one', chunkIndex: 3, totalChunks: 3 }, parts[2]!);
    expect(done.body).toEqual({ url: `/pdf/${sha1(data)}.pdf` });
    expect(await readBack(done.body.url)).toEqual(data);
  });

  it('out of order, the chunks still go to their places, and the file is hashed right', async () => {
    const size = 40 * KB;
    const data = pdfBytes(5 * size - 333);
    const parts = cut(data, size, 5);
    let last: Awaited<ReturnType<typeof chunk>> | null = null;
    for (const index of [0, 3, 1, 4]) {
      last = await chunk(author, { clientUploadId: 'out-of-order', chunkIndex: index, totalChunks: 5 }, parts[index]!);
      expect(last.status).toBe(200);
    }
    expect(await stored(await uploadDir())).toEqual({
      0: `in-place:0:${size}`,
      1: `in-place:${size}:${size}`,
      3: `in-place:${3 * size}:${size}`,
      4: `in-place:${4 * size}:${size - 333}`,
    });
    last = await chunk(author, { clientUploadId: 'out-of-order', chunkIndex: 2, totalChunks: 5 }, parts[2]!);
    expect(last.body).toEqual({ url: `/pdf/${sha1(data)}.pdf` });
    expect(await readBack(last.body.url)).toEqual(data);
  });

  it('a chunk cut in the middle counts for nothing; its next copy takes its place', async () => {
    const size = 64 * KB;
    const data = pdfBytes(3 * size - 1);
    const parts = cut(data, size, 3);
    const id = 'cut-in-the-middle';
    expect((await chunk(author, { clientUploadId: id, chunkIndex: 0, totalChunks: 3 }, parts[0]!)).status).toBe(200);
    // Other bytes for chunk 1, cut after half of them: written into the slot, never stored.
    await sendCutChunk(author, { clientUploadId: id, chunkIndex: 1, totalChunks: 3 }, pdfBytes(size), size / 2);
    const status = await author.get(`/attachment/chunk/status?clientUploadId=${id}`);
    expect(status.body.chunks).toEqual({ 0: 'completed', 1: 'missing', 2: 'missing' });
    const dir = await uploadDir();
    expect(await stored(dir)).toEqual({ 0: `in-place:0:${size}` });
    // Its claim is given up: the next copy goes in place.
    expect((await readdir(dir)).filter((name) => name.endsWith('.claim'))).toEqual([]);
    // The last chunk, cut once after more bytes than it has, then sent whole: nothing past its end stays.
    await sendCutChunk(author, { clientUploadId: id, chunkIndex: 2, totalChunks: 3 }, pdfBytes(size), size - 10);
    expect((await chunk(author, { clientUploadId: id, chunkIndex: 1, totalChunks: 3 }, parts[1]!)).status).toBe(200);
    expect(await stored(dir)).toEqual({ 0: `in-place:0:${size}`, 1: `in-place:${size}:${size}` });
    const done = await chunk(author, { clientUploadId: id, chunkIndex: 2, totalChunks: 3 }, parts[2]!);
    expect(done.body).toEqual({ url: `/pdf/${sha1(data)}.pdf` });
    expect(await readBack(done.body.url)).toEqual(data);
  });

  it('a chunk sent twice at once is written by one request; the first stored copy is the one kept', async () => {
    const size = 64 * KB;
    const data = pdfBytes(3 * size);
    const parts = cut(data, size, 3);
    const other = pdfBytes(size);
    const id = 'twice-at-once';
    expect((await chunk(author, { clientUploadId: id, chunkIndex: 0, totalChunks: 3 }, parts[0]!)).status).toBe(200);
    // The first copy of chunk 1 holds its slot, with all but its last kilobyte written…
    let release!: () => void;
    const held = sendHeldChunk(author, fieldsOf({ clientUploadId: id, chunkIndex: 1, totalChunks: 3 }), other, new Promise<void>((resolve) => (release = resolve)));
    const dir = await uploadDir();
    for (let i = 0; i < 100 && !(await readdir(dir)).includes('1.claim'); i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await readdir(dir)).toContain('1.claim');
    // …so the second, sent whole meanwhile, cannot write there: it is received apart and stored
    // first (it answers once the held one has: chunks under way together wait for each other).
    const whole = chunk(author, { clientUploadId: id, chunkIndex: 1, totalChunks: 3 }, parts[1]!);
    for (let i = 0; i < 100 && !(await readdir(dir)).includes('1'); i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await stored(dir)).toEqual({ 0: `in-place:0:${size}`, 1: 'apart' });
    release();
    expect([(await held).status, (await whole).status]).toEqual([200, 200]);
    // The held copy's bytes went into the slot, but it came second: they count for nothing.
    expect(await stored(dir)).toEqual({ 0: `in-place:0:${size}`, 1: 'apart' });
    const done = await chunk(author, { clientUploadId: id, chunkIndex: 2, totalChunks: 3 }, parts[2]!);
    expect(done.body).toEqual({ url: `/pdf/${sha1(data)}.pdf` });
    expect(await readBack(done.body.url)).toEqual(data);
  });

  /**
   * An upload of three 64 KB chunks counted from 0, its first two in, and a request for chunk
   * `index` of it (`bytes`, or that chunk's own) held before its last kilobyte.
   */
  async function twoInAndOneHeld(id: string, index: number, bytes?: Buffer) {
    const size = 64 * KB;
    const data = pdfBytes(3 * size);
    const parts = cut(data, size, 3);
    for (const i of [0, 1]) expect((await chunk(author, { clientUploadId: id, chunkIndex: i, totalChunks: 3 }, parts[i]!)).status).toBe(200);
    let release!: () => void;
    const held = sendHeldChunk(author, fieldsOf({ clientUploadId: id, chunkIndex: index, totalChunks: 3 }), bytes ?? parts[index]!, new Promise<void>((resolve) => (release = resolve)));
    return { data, parts, held, release: () => release() };
  }

  it('a request writing into the data file while the upload completes never writes into the stored file', async () => {
    const id = 'written-while-completing';
    // Index 3 of chunks counted from 0: no chunk of this upload, but its request has a slot (just
    // past the file's end) and is writing there, held before its last kilobyte…
    const { data, parts, held, release } = await twoInAndOneHeld(id, 3, pdfBytes(64 * KB));
    const dir = await uploadDir();
    for (let i = 0; i < 100 && !(await readdir(dir)).includes('3.claim'); i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await readdir(dir)).toContain('3.claim');
    // …when the last chunk completes the upload: the file is stored apart from the data file.
    const done = await chunk(author, { clientUploadId: id, chunkIndex: 2, totalChunks: 3 }, parts[2]!);
    expect(done.body).toEqual({ url: `/pdf/${sha1(data)}.pdf` });
    release();
    // It is answered as any chunk of a finished upload is; what it wrote is in no stored file.
    expect((await held).body).toEqual(done.body);
    expect(await readBack(done.body.url)).toEqual(data);
  });

  it('a chunk sent again while the upload completes answers its URL and leaves nothing behind', async () => {
    const id = 'sent-again';
    // Chunk 1 again (a client's retry): stored already, so received apart, held before its last kilobyte…
    const { data, parts, held, release } = await twoInAndOneHeld(id, 1);
    for (let i = 0; i < 100 && (await temporaryFiles(server.dataDir)).length === 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await temporaryFiles(server.dataDir)).toHaveLength(1);
    // …when the last chunk completes the upload, and its chunks go.
    const done = await chunk(author, { clientUploadId: id, chunkIndex: 2, totalChunks: 3 }, parts[2]!);
    expect(done.body).toEqual({ url: `/pdf/${sha1(data)}.pdf` });
    release();
    expect((await held).body).toEqual(done.body);
    expect(await readdir(chunksDir())).toEqual([]);
    expect(await temporaryFiles(server.dataDir)).toEqual([]);
    expect(await readBack(done.body.url)).toEqual(data);
  });

  it('an index whose claim a stopped process left behind is received apart, and the upload completes', async () => {
    const size = 32 * KB;
    const data = pdfBytes(3 * size - 5);
    const parts = cut(data, size, 3);
    const id = 'claim-left-behind';
    expect((await chunk(author, { clientUploadId: id, chunkIndex: 0, totalChunks: 3 }, parts[0]!)).status).toBe(200);
    const dir = await uploadDir();
    // As a process stopped in the middle of writing chunk 2 leaves it.
    await writeFile(path.join(dir, '2.claim'), '');
    expect((await chunk(author, { clientUploadId: id, chunkIndex: 2, totalChunks: 3 }, parts[2]!)).status).toBe(200);
    expect((await chunk(author, { clientUploadId: id, chunkIndex: 1, totalChunks: 3 }, parts[1]!)).status).toBe(200);
    expect(await readdir(chunksDir())).toEqual([]);
    expect(await readBack(`/pdf/${sha1(data)}.pdf`)).toEqual(data);
  });

  it('a chunk stored but not recorded (a process stopped between the two), then sent again at another size: the upload is refused in words, never a 500 on every try', async () => {
    const size = 64 * KB;
    const parts = cut(pdfBytes(3 * size), size, 3);
    const id = 'stored-not-recorded';
    expect((await chunk(author, { clientUploadId: id, chunkIndex: 0, totalChunks: 3 }, parts[0]!)).status).toBe(200);
    expect((await chunk(author, { clientUploadId: id, chunkIndex: 1, totalChunks: 3 }, parts[1]!)).status).toBe(200);
    // As if the process had stopped after the chunk's marker and before its record.
    const db = server.service.db;
    const upload = await db('chunked_uploads').where({ client_upload_id: id }).first('id');
    await db('upload_chunks').where({ upload_id: upload.id, chunk_index: 1 }).delete();
    await db('chunked_uploads').where({ id: upload.id }).decrement('received_bytes', size);
    // The client sends chunk 1 again, cut differently: the copy stored first stays, this size is recorded.
    expect((await chunk(author, { clientUploadId: id, chunkIndex: 1, totalChunks: 3 }, parts[1]!.subarray(0, size / 2))).status).toBe(200);
    const last = await chunk(author, { clientUploadId: id, chunkIndex: 2, totalChunks: 3 }, parts[2]!);
    expect(last.status).toBe(400);
    expect(last.body).toMatchObject({ name: 'ValidationError', message: expect.stringContaining('start the upload again') });
    expect(await db('chunked_uploads').where({ id: upload.id })).toEqual([]);
    expect(await readdir(chunksDir())).not.toContain(upload.id);
    expect(await temporaryFiles(server.dataDir)).toEqual([]);
  });

  it('a chunk longer than the first one is kept apart, the others in place', async () => {
    const data = pdfBytes(1000 + 3000 + 1000 + 500);
    const parts = [data.subarray(0, 1000), data.subarray(1000, 4000), data.subarray(4000, 5000), data.subarray(5000)];
    const id = 'longer-than-the-first';
    for (const index of [0, 1, 2]) expect((await chunk(author, { clientUploadId: id, chunkIndex: index, totalChunks: 4 }, parts[index]!)).status).toBe(200);
    expect(await stored(await uploadDir())).toEqual({ 0: 'in-place:0:1000', 1: 'apart', 2: 'in-place:2000:1000' });
    const done = await chunk(author, { clientUploadId: id, chunkIndex: 3, totalChunks: 4 }, parts[3]!);
    expect(done.body).toEqual({ url: `/pdf/${sha1(data)}.pdf` });
    expect(await readBack(done.body.url)).toEqual(data);
  });

  it('no chunk is written in place past the field’s limit: a refused one there leaves nothing', async () => {
    await root.post('/invitations', {
      id: `${VENUE}/-/Small`,
      domain: VENUE,
      form: { doc: { order: 1, value: { param: { type: 'file', extensions: ['pdf'], maxSize: 0.004 } } } },
    });
    const send = (index: number, data: Buffer, filename = 'small.pdf') =>
      sendMultipart(author, 'PUT', '/attachment/chunk', { name: 'doc', invitationId: `${VENUE}/-/Small`, clientUploadId: 'past-the-limit', chunkIndex: index, totalChunks: 5 }, { filename, data });
    expect((await send(0, pdfBytes(1000))).status).toBe(200);
    const dir = await uploadDir();
    // Chunk 4 would start at 4,000 bytes of a field of 4,194: in place, refused (its name), its bytes stay until the upload goes.
    expect((await send(4, pdfBytes(1000), 'small.exe')).status).toBe(400);
    expect((await stat(path.join(dir, 'data'))).size).toBe(5000);
    // Chunk 5 of 5 would start at 5,000 bytes, past the limit: received apart, and refused, it leaves nothing.
    expect((await send(5, pdfBytes(1000), 'small.exe')).status).toBe(400);
    expect((await stat(path.join(dir, 'data'))).size).toBe(5000);
    expect(await stored(dir)).toEqual({ 0: 'in-place:0:1000' });
    expect(await temporaryFiles(server.dataDir)).toEqual([]);
  });
});

describe('claims on places in a data file, at the start of a server', () => {
  let dir: string;
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('those of stopped processes of this machine are removed; a running one’s stays', async () => {
    dir = await tempDir();
    const first = await startServer({}, dir);
    const { author } = await venueWithAuthor(first);
    const size = 32 * KB;
    const data = pdfBytes(3 * size);
    const parts = cut(data, size, 3);
    const id = 'claims-at-start';
    expect((await chunk(author, { clientUploadId: id, chunkIndex: 0, totalChunks: 3 }, parts[0]!)).status).toBe(200);
    await first.close();
    const [upload] = await readdir(path.join(dir, 'chunks'));
    const uploadDir = path.join(dir, 'chunks', upload!);
    const host = PROCESS_OWNER.split('.')[2];
    // Chunk 1 was being written by a process that has stopped; chunk 2 by one still running.
    await writeFile(path.join(uploadDir, '1.claim'), `${spawnSync(process.execPath, ['-e', '']).pid}.${randomUUID()}.${host}`);
    await writeFile(path.join(uploadDir, '2.claim'), `${process.ppid}.${randomUUID()}.${host}`);

    // As a restart: the same data folder, the same public address.
    const second = await startServer({ BASE_URL: first.url }, dir);
    try {
      expect((await readdir(uploadDir)).filter((name) => name.endsWith('.claim'))).toEqual(['2.claim']);
      const again = new Client(second.url);
      for (const [name, value] of author.jar) again.jar.set(name, value);
      expect((await chunk(again, { clientUploadId: id, chunkIndex: 1, totalChunks: 3 }, parts[1]!)).status).toBe(200);
      expect(await readlink(path.join(uploadDir, '1'))).toBe(`in-place:${size}:${size}`);
      const done = await chunk(again, { clientUploadId: id, chunkIndex: 2, totalChunks: 3 }, parts[2]!);
      expect(done.body).toEqual({ url: `/pdf/${sha1(data)}.pdf` });
    } finally {
      await second.close();
    }
  });
});
