/**
 * A chunked upload's SHA-1 is computed as its chunks arrive, in order, by the process that
 * stores them, and the assembly hashes only what was not. Whatever the order, the duplicates, the
 * way the client counts or the process each chunk reaches, the file's address must be the SHA-1
 * of the bytes stored under it, and those bytes the ones the first copy of each chunk carried.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cookieHeader } from '../helpers/cookies.ts';
import { Client, sendMultipart } from '../helpers/http.ts';
import { startServer, tempDir, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';
import { filesUnder, pdfBytes, sha1, SUBMISSION, VENUE, venueWithAuthor } from './helpers.ts';

const KB = 1024;

type Fields = { clientUploadId: string; chunkIndex: number; totalChunks: number; name?: string; invitationId?: string };
const chunk = (client: Client, fields: Fields, data: Uint8Array) =>
  sendMultipart(client, 'PUT', '/attachment/chunk', { name: 'pdf', invitationId: SUBMISSION, ...fields }, { filename: 'paper.pdf', data });

/** `data` cut into pieces of the given lengths, in order. */
function cut(data: Buffer, lengths: number[]): Buffer[] {
  let offset = 0;
  return lengths.map((length) => data.subarray(offset, (offset += length)));
}

/** The stored file behind a URL, as its uploader reads it back. */
async function storedBytes(server: TestServer, client: Client, url: string): Promise<Buffer> {
  const res = await fetch(`${server.url}${url}`, { headers: { cookie: cookieHeader(client) } });
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

describe('the SHA-1 of a chunked upload, hashed as its chunks arrive', () => {
  let server: TestServer;
  let author: Client;

  beforeAll(async () => {
    server = await startServer();
    ({ author } = await venueWithAuthor(server));
  });
  afterAll(async () => {
    await server.close();
  });

  /** Sends the chunks in `order` (as indexes into `parts`, counted from `base`), one after the other; answers the last answer. */
  async function sendAll(id: string, parts: Buffer[], order: number[], base: 0 | 1 = 0) {
    let last: Awaited<ReturnType<typeof chunk>> | null = null;
    for (const position of order) {
      last = await chunk(author, { clientUploadId: id, chunkIndex: position + base, totalChunks: parts.length }, parts[position] ?? Buffer.alloc(0));
      expect(last.status).toBe(200);
    }
    return last;
  }

  it.each([
    ['in order, counted from 0', [0, 1, 2, 3, 4], 0 as const],
    ['in order, counted from 1 (the count is known only at the last chunk)', [0, 1, 2, 3, 4], 1 as const],
    ['the second chunk before the first, counted from 0', [1, 0, 2, 3, 4], 0 as const],
    ['the second chunk before the first, counted from 1', [1, 0, 2, 3, 4], 1 as const],
    ['backwards', [4, 3, 2, 1, 0], 0 as const],
    ['the first chunk last', [1, 2, 3, 4, 0], 0 as const],
  ])('is the SHA-1 of the file for chunks sent %s', async (what, order, base) => {
    const data = pdfBytes(5 * 64 * KB - 999);
    const parts = cut(data, [64 * KB, 64 * KB, 64 * KB, 64 * KB, 64 * KB - 999]);
    const last = await sendAll(`order-${order.join('')}-${base}`, parts, order, base);
    const url = `/pdf/${sha1(data)}.pdf`;
    expect(last?.body, what).toEqual({ url });
    expect(sha1(await storedBytes(server, author, url))).toBe(sha1(data));
  });

  it('follows the first copy of a chunk sent twice with other bytes, one after the other or at once', async () => {
    const data = pdfBytes(4 * 32 * KB);
    const parts = cut(data, [32 * KB, 32 * KB, 32 * KB, 32 * KB]);
    const other = pdfBytes(32 * KB);
    const id = 'twice-other-bytes';
    await chunk(author, { clientUploadId: id, chunkIndex: 0, totalChunks: 4 }, parts[0] ?? Buffer.alloc(0));
    await chunk(author, { clientUploadId: id, chunkIndex: 1, totalChunks: 4 }, parts[1] ?? Buffer.alloc(0));
    // A retry of chunk 1 with other bytes: the first copy stays, and so does the hash of it.
    expect((await chunk(author, { clientUploadId: id, chunkIndex: 1, totalChunks: 4 }, other)).status).toBe(200);
    // Chunk 2 twice at once, with different bytes: whichever is stored, the address is its file's.
    const [a, b] = await Promise.all([
      chunk(author, { clientUploadId: id, chunkIndex: 2, totalChunks: 4 }, parts[2] ?? Buffer.alloc(0)),
      chunk(author, { clientUploadId: id, chunkIndex: 2, totalChunks: 4 }, other),
    ]);
    expect([a.status, b.status]).toEqual([200, 200]);
    const done = await chunk(author, { clientUploadId: id, chunkIndex: 3, totalChunks: 4 }, parts[3] ?? Buffer.alloc(0));
    const url = (done.body as { url: string }).url;
    const stored = await storedBytes(server, author, url);
    expect(url).toBe(`/pdf/${sha1(stored)}.pdf`);
    expect(stored.subarray(0, 64 * KB)).toEqual(data.subarray(0, 64 * KB));
    expect([sha1(data), sha1(Buffer.concat([parts[0], parts[1], other, parts[3]].map((p) => p ?? Buffer.alloc(0))))]).toContain(sha1(stored));
  });

  it('is the SHA-1 of the file for chunks of different sizes', async () => {
    const data = pdfBytes(1000 + 3000 + 17 + 2000);
    const parts = cut(data, [1000, 3000, 17, 2000]);
    const last = await sendAll('sizes-vary', parts, [0, 1, 2, 3]);
    expect(last?.body).toEqual({ url: `/pdf/${sha1(data)}.pdf` });
  });

  it('starts afresh for an upload refused and sent again under the same id', async () => {
    const root = (await loggedIn(server, (await createActiveUser(server, { role: 'superuser' })).email)).client;
    await root.post('/invitations', {
      id: `${VENUE}/-/Small`,
      domain: VENUE,
      form: { doc: { order: 1, value: { param: { type: 'file', extensions: ['pdf'], maxSize: 0.004 } } } },
    });
    const send = (index: number, data: Buffer, total: number) =>
      chunk(author, { clientUploadId: 'again', chunkIndex: index, totalChunks: total, name: 'doc', invitationId: `${VENUE}/-/Small` }, data);
    const refused = pdfBytes(3 * 2000);
    expect((await send(0, refused.subarray(0, 2000), 3)).status).toBe(200);
    expect((await send(1, refused.subarray(2000, 4000), 3)).status).toBe(200);
    expect((await send(2, refused.subarray(4000), 3)).status).toBe(413);
    const data = pdfBytes(2 * 1500);
    expect((await send(0, data.subarray(0, 1500), 2)).status).toBe(200);
    const done = await send(1, data.subarray(1500), 2);
    expect(done.body).toEqual({ url: `/pdf/${sha1(data)}.pdf` });
  });
});

describe('the SHA-1 of a chunked upload whose chunks reach two processes', () => {
  let dir: string;
  let first: TestServer;
  let second: TestServer;
  let atFirst: Client;
  let atSecond: Client;

  beforeAll(async () => {
    dir = await tempDir();
    first = await startServer({}, dir);
    second = await startServer({ BASE_URL: first.url }, dir);
    ({ author: atFirst } = await venueWithAuthor(first));
    atSecond = new Client(second.url);
    for (const [name, value] of atFirst.jar) atSecond.jar.set(name, value);
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    ['turn about', [0, 1, 0, 1, 0, 1]],
    ['the first half to one, the rest to the other, the last back to the first', [0, 0, 0, 1, 1, 0]],
    ['all but the last to one, the last to the other', [0, 0, 0, 0, 0, 1]],
  ])('is the SHA-1 of the file for chunks sent %s', async (_what, route) => {
    const data = pdfBytes(6 * 40 * KB - 5);
    const parts = cut(data, [40 * KB, 40 * KB, 40 * KB, 40 * KB, 40 * KB, 40 * KB - 5]);
    const id = `two-${route.join('')}`;
    let last: Awaited<ReturnType<typeof chunk>> | null = null;
    for (const [index, to] of route.entries()) {
      last = await chunk(to === 0 ? atFirst : atSecond, { clientUploadId: id, chunkIndex: index, totalChunks: parts.length }, parts[index] ?? Buffer.alloc(0));
      expect(last.status).toBe(200);
    }
    const url = `/pdf/${sha1(data)}.pdf`;
    expect(last?.body).toEqual({ url });
    expect(sha1(await storedBytes(first, atFirst, url))).toBe(sha1(data));
    expect((await filesUnder(dir)).map((f) => f.slice(dir.length)).filter((f) => !f.startsWith('/files/'))).toEqual([]);
  });
});
