/**
 * Issue 29: on the local disk a tus upload's bytes are written once. Every PATCH after the first
 * goes at its offset into the upload's data file, which then becomes the stored file; the parts
 * of a parallel upload are written side by side into one file in the order they were created,
 * and a final upload naming them in that order is that file. Whatever else a client does (parts
 * named in another order, a part left out and written later), the stored file is the bytes sent,
 * under their SHA-1, and nothing written later reaches it. "Written once" is checked where it
 * shows: the stored file is the very inode the bytes were written into.
 */
import { readdir, readlink, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as tus from 'tus-js-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.ts';
import { pdfBytes, sha1, SUBMISSION } from './helpers.ts';
import { encodeMetadata, metadataFor, parallelOptions, RecordingHttpStack, runUpload, tusRequest, tusServerPerFile, type Person } from './tus-helpers.ts';

const running = tusServerPerFile(beforeAll, afterAll);
let server: TestServer;
let author: Person;
beforeAll(() => {
  ({ server, author } = running);
});

const METADATA = encodeMetadata(metadataFor(SUBMISSION, 'pdf', 'paper.pdf'));
const idOf = (url: string) => new URL(url, server.url).pathname.split('/').pop() ?? '';
const dataOf = (url: string) => path.join(server.dataDir, 'chunks', idOf(url), 'data');
const storedPath = (data: Uint8Array) => path.join(server.dataDir, 'files', 'pdf', `${sha1(data)}.pdf`);

async function create(length: number, concat?: string): Promise<string> {
  const headers: Record<string, string> = { 'Upload-Metadata': METADATA, ...(concat === 'partial' ? { 'Upload-Concat': 'partial' } : {}) };
  if (concat?.startsWith('final;')) headers['Upload-Concat'] = concat;
  else headers['Upload-Length'] = String(length);
  const res = await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.headers.get('location') ?? '';
}

async function patch(url: string, offset: number, body: Uint8Array): Promise<Headers> {
  const res = await tusRequest(server, 'PATCH', url, { token: author.token, headers: { 'Upload-Offset': String(offset) }, body });
  expect(res.status, JSON.stringify(res.body)).toBe(204);
  return res.headers;
}

/** The stored file, read back through the service. */
async function readBack(data: Uint8Array): Promise<Buffer> {
  const res = await fetch(`${server.url}/pdf/${sha1(data)}.pdf`, { headers: { authorization: `Bearer ${author.token}` } });
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

/** The upload's stored chunks: where each one's bytes are (`in-place:<position>:<size>`), or `apart`. */
async function chunksOf(url: string): Promise<Record<string, string>> {
  const dir = path.dirname(dataOf(url));
  const found: Record<string, string> = {};
  for (const name of await readdir(dir)) {
    if (/^\d+$/.test(name)) found[name] = await readlink(path.join(dir, name)).catch(() => 'apart');
  }
  return found;
}

describe('an upload sent in several PATCHes', () => {
  it('writes each later PATCH at its offset into the data file, which becomes the stored file', async () => {
    const data = pdfBytes(300_000);
    const url = await create(data.length);
    await patch(url, 0, data.subarray(0, 100_000));
    await patch(url, 100_000, data.subarray(100_000, 250_000));
    expect(await chunksOf(url)).toEqual({ 1: 'in-place:0:100000', 2: 'in-place:100000:150000' });
    const written = await stat(dataOf(url));
    const last = await patch(url, 250_000, data.subarray(250_000));
    expect(last.get('attachment-url')).toBe(`/pdf/${sha1(data)}.pdf`);
    expect((await stat(storedPath(data))).ino).toBe(written.ino);
    expect((await readBack(data)).equals(data)).toBe(true);
  });

  it('after a part kept apart (its place held by another request), every later part is kept apart too, and the file is still right', async () => {
    const data = pdfBytes(240_000);
    const url = await create(data.length);
    await patch(url, 0, data.subarray(0, 80_000));
    // A request that lost the upload and may still be writing holds part 2's place.
    const held = path.join(path.dirname(dataOf(url)), '2.claim');
    await writeFile(held, 'another request', { flag: 'wx' });
    await patch(url, 80_000, data.subarray(80_000, 160_000));
    await rm(held);
    await patch(url, 160_000, data.subarray(160_000, 200_000));
    expect(await chunksOf(url)).toEqual({ 1: 'in-place:0:80000', 2: 'apart', 3: 'apart' });
    const last = await patch(url, 200_000, data.subarray(200_000));
    expect(last.get('attachment-url')).toBe(`/pdf/${sha1(data)}.pdf`);
    expect((await readBack(data)).equals(data)).toBe(true);
  });
});

describe('parallel parts (concatenation)', () => {
  it('are written side by side into one file, and the final upload naming them in order is that file', async () => {
    const data = pdfBytes(500_000);
    const bounds = [0, 120_000, 330_000, 500_000];
    const parts = [];
    for (let i = 0; i < 3; i += 1) parts.push(await create(bounds[i + 1]! - bounds[i]!, 'partial'));
    // In parallel, the first part in two PATCHes.
    await Promise.all([
      (async () => {
        await patch(parts[0]!, 0, data.subarray(0, 50_000));
        await patch(parts[0]!, 50_000, data.subarray(50_000, 120_000));
      })(),
      patch(parts[1]!, 0, data.subarray(120_000, 330_000)),
      patch(parts[2]!, 0, data.subarray(330_000, 500_000)),
    ]);
    const shared = await stat(dataOf(parts[0]!));
    for (const part of parts) expect((await stat(dataOf(part))).ino).toBe(shared.ino);
    expect(shared.nlink).toBe(3);
    expect(await chunksOf(parts[2]!)).toEqual({ 1: 'in-place:330000:170000' });

    const final = await create(0, `final;${parts.join(' ')}`);
    const head = await tusRequest(server, 'HEAD', final, { token: author.token });
    expect(head.headers.get('attachment-url')).toBe(`/pdf/${sha1(data)}.pdf`);
    expect((await stat(storedPath(data))).ino).toBe(shared.ino);
    expect((await readBack(data)).equals(data)).toBe(true);
    // The parts are gone, and with them every other name of the file.
    expect((await stat(storedPath(data))).nlink).toBe(1);
  });

  it('named in another order than they were created, they are copied into the right order', async () => {
    const data = pdfBytes(200_000);
    const a = await create(80_000, 'partial');
    const b = await create(120_000, 'partial');
    // b holds the file's start, a its end.
    await patch(b, 0, data.subarray(0, 120_000));
    await patch(a, 0, data.subarray(120_000));
    const shared = (await stat(dataOf(a))).ino;
    await create(0, `final;${b} ${a}`);
    expect((await stat(storedPath(data))).ino).not.toBe(shared);
    expect((await readBack(data)).equals(data)).toBe(true);
  });

  it('a part of the same span left out of the final upload is copied around, and what it writes later never reaches the stored file', async () => {
    const data = pdfBytes(150_000);
    const first = await create(100_000, 'partial');
    const second = await create(50_000, 'partial');
    const stray = await create(40_000, 'partial');
    await patch(first, 0, data.subarray(0, 100_000));
    await patch(second, 0, data.subarray(100_000));
    const final = await create(0, `final;${first} ${second}`);
    expect((await tusRequest(server, 'HEAD', final, { token: author.token })).headers.get('attachment-url')).toBe(`/pdf/${sha1(data)}.pdf`);
    // The stray part still shares the span's file: it was copied, not linked.
    expect((await stat(storedPath(data))).ino).not.toBe((await stat(dataOf(stray))).ino);
    const later = pdfBytes(40_000);
    await patch(stray, 0, later);
    expect((await readBack(data)).equals(data)).toBe(true);
    // And the stray part, made a file of its own, holds what it was sent.
    const alone = await create(0, `final;${stray}`);
    expect((await tusRequest(server, 'HEAD', alone, { token: author.token })).headers.get('attachment-url')).toBe(`/pdf/${sha1(later)}.pdf`);
    expect((await readBack(later)).equals(later)).toBe(true);
  });

  it('a final upload of the first part alone is copied: the part after it, which shares the file, never writes into the stored file', async () => {
    const first = pdfBytes(90_000);
    const a = await create(first.length, 'partial');
    const b = await create(30_000, 'partial');
    await patch(a, 0, first);
    expect((await stat(dataOf(a))).ino).toBe((await stat(dataOf(b))).ino);
    await create(0, `final;${a}`);
    expect((await stat(storedPath(first))).ino).not.toBe((await stat(dataOf(b))).ino);
    await patch(b, 0, pdfBytes(30_000));
    expect((await readBack(first)).equals(first)).toBe(true);
  });

  it('tus-js-client\'s parallel upload is kept without a copy when its parts were placed in the file\'s order, and copied right otherwise', async () => {
    const data = pdfBytes(700_001);
    let shared: number | undefined;
    let placedInOrder: boolean | undefined;
    const httpStack = new RecordingHttpStack();
    const outcome = await runUpload(data, parallelOptions(server, author, {
      httpStack,
      // Before the final upload: where the parts were placed, and the file they share.
      onBeforeRequest: async (req: tus.HttpRequest) => {
        const parts = req.getHeader('Upload-Concat')?.match(/^final;(.+)$/)?.[1]?.split(' ');
        if (!parts) return;
        shared = (await stat(dataOf(parts[0]!))).ino;
        const rows = (await server.service.db('tus_uploads').whereIn('id', parts.map(idOf)).select('id', 'span', 'span_at', 'upload_length')) as Array<{ id: string; span: string; span_at: number | string; upload_length: number | string }>;
        let end = 0;
        placedInOrder = parts.map(idOf).every((id) => {
          const row = rows.find((r) => r.id === id);
          const follows = row !== undefined && row.span === rows.find((r) => r.id === idOf(parts[0]!))?.span && Number(row.span_at) === end;
          end += Number(row?.upload_length ?? 0);
          return follows;
        });
      },
    }));
    expect(outcome.ok, outcome.ok ? '' : String(outcome.error)).toBe(true);
    expect(httpStack.of('POST').map((p) => p.status)).toEqual([201, 201, 201, 201, 201]);
    expect(placedInOrder).toBeDefined();
    // Four creations sent at once may reach the service in another order (a busy machine): then
    // the parts cannot be the file as they lie, and it is copied. The file is right either way.
    if (placedInOrder) expect((await stat(storedPath(data))).ino).toBe(shared);
    else expect((await stat(storedPath(data))).ino).not.toBe(shared);
    expect((await readBack(data)).equals(data)).toBe(true);
  });
});
