/**
 * One contract, two stores: what the attachments service relies on of its FileStore, run against
 * the local disk and against an S3-compatible store (s3rver, a real server on 127.0.0.1 keeping
 * its objects in a temporary folder). Whatever `STORAGE_URL` says, uploads behave the same.
 */
import { createHash, randomUUID } from 'node:crypto';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../server/config.ts';
import { removeQuietly } from '../../server/attachments/store/disk.ts';
import type { FileStore, Received } from '../../server/attachments/store/file-store.ts';
import { LocalFileStore } from '../../server/attachments/store/local.ts';
import { S3FileStore } from '../../server/attachments/store/s3.ts';
import { tempDir } from '../helpers/server.ts';
import { pdfBytes } from './helpers.ts';
import { S3RVER_CREDENTIALS, startS3rver, type TestBucket } from './s3rver.ts';

const sha1 = (data: Uint8Array) => createHash('sha1').update(data).digest('hex');

async function bytesOf(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

/** A store under test, and how to see what it holds besides stored files. */
interface Subject {
  store: FileStore;
  /** Temporary files and keys: what a failure or a crash may leave behind. */
  temporaries(): Promise<string[]>;
  close(): Promise<void>;
}

async function localSubject(): Promise<Subject> {
  const dir = await tempDir('store-local-');
  const store = new LocalFileStore(dir);
  await store.init();
  return {
    store,
    temporaries: () => readdir(path.join(dir, 'tmp')),
    close: () => rm(dir, { recursive: true, force: true }),
  };
}

let bucket: TestBucket | null = null;

async function s3Subject(): Promise<Subject> {
  bucket ??= await startS3rver();
  const s3 = bucket;
  const dir = await tempDir('store-s3-');
  // Each store its own prefix: the cases do not see each other's objects.
  const prefix = `contract-${randomUUID().slice(0, 8)}/`;
  const target = loadConfig({ DATA_DIR: dir, STORAGE_URL: s3.storageUrl(prefix) }).storage;
  if (target.kind !== 's3') throw new Error('STORAGE_URL was not read as a bucket');
  const store = new S3FileStore(target, dir);
  await store.init();
  return {
    store,
    async temporaries() {
      const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `${prefix}tmp/` }));
      return [...(await readdir(path.join(dir, 'tmp'))), ...(listed.Contents ?? []).map((o) => o.Key ?? '')];
    },
    close: () => rm(dir, { recursive: true, force: true }),
  };
}

beforeAll(() => {
  // The S3 store takes its credentials where the AWS SDK looks for them, never from STORAGE_URL.
  vi.stubEnv('AWS_ACCESS_KEY_ID', S3RVER_CREDENTIALS.accessKeyId);
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', S3RVER_CREDENTIALS.secretAccessKey);
});
afterAll(async () => {
  vi.unstubAllEnvs();
  await bucket?.close();
});

describe.each([
  ['the local disk', localSubject],
  ['an S3-compatible store (s3rver)', s3Subject],
])('a FileStore on %s', (_name, open) => {
  let subject: Subject;
  let store: FileStore;
  beforeAll(async () => {
    subject = await open();
    store = subject.store;
  });
  afterAll(() => subject.close());

  const receive = (data: Uint8Array, maxBytes = 10 * 1024 * 1024) => store.receive(Readable.from([Buffer.from(data)]), maxBytes);
  const uploadId = () => randomUUID();

  it('stores a received file under its content address and reads it back whole', async () => {
    const data = pdfBytes(300_000);
    const received = await receive(data);
    expect(received).toMatchObject({ size: data.length, sha1: sha1(data), head: data.subarray(0, 8) });
    const url = await store.keep(received, 'pdf');
    expect(url).toBe(`/pdf/${sha1(data)}.pdf`);
    expect(await store.info(url)).toEqual({ size: data.length, modifiedAt: expect.any(Date) });
    expect((await bytesOf(await store.read(url))).equals(data)).toBe(true);
    // Its temporary file went with the keeping.
    expect(await subject.temporaries()).toEqual([]);
  });

  it('keeps other files under /attachment/<sha1>.<extension>', async () => {
    const data = Buffer.from('a,b\n1,2\n');
    const url = await store.keep(await receive(data), 'csv');
    expect(url).toBe(`/attachment/${sha1(data)}.csv`);
    expect((await bytesOf(await store.read(url))).toString()).toBe('a,b\n1,2\n');
  });

  it('reads a range of a stored file, both ends included', async () => {
    const data = pdfBytes(100_000);
    const url = await store.keep(await receive(data), 'pdf');
    expect((await bytesOf(await store.read(url, { start: 10, end: 19 }))).equals(data.subarray(10, 20))).toBe(true);
    expect((await bytesOf(await store.read(url, { start: 99_990, end: 99_999 }))).equals(data.subarray(99_990))).toBe(true);
  });

  it('knows nothing of a file never stored, nor of a URL that is not one of its own', async () => {
    const url = `/pdf/${'0'.repeat(40)}.pdf`;
    expect(await store.info(url)).toBeNull();
    await expect(store.read(url)).rejects.toMatchObject({ name: 'NotFoundError' });
    expect(await store.info('/elsewhere/file.pdf')).toBeNull();
    await expect(store.read('/elsewhere/file.pdf')).rejects.toMatchObject({ name: 'NotFoundError' });
  });

  it('never replaces a stored file: under a content address taken, the first bytes stay', async () => {
    const first = pdfBytes(5000);
    const url = await store.keep(await receive(first), 'pdf');
    // Other bytes claiming the same SHA-1, as a collision made on purpose would.
    const impostor: Received = { ...(await receive(pdfBytes(5000))), sha1: sha1(first) };
    expect(await store.keep(impostor, 'pdf')).toBe(url);
    expect((await bytesOf(await store.read(url))).equals(first)).toBe(true);
    expect(await subject.temporaries()).toEqual([]);
  });

  it('stops receiving past the limit with a 413, leaving nothing behind', async () => {
    await expect(receive(pdfBytes(2000), 1000)).rejects.toMatchObject({ status: 413 });
    expect(await subject.temporaries()).toEqual([]);
  });

  it('keeps the first copy of a chunk, and assembles the chunks in order into a file it then stores', async () => {
    const id = uploadId();
    const data = pdfBytes(12 * 1024 * 1024 + 123);
    const size = 5 * 1024 * 1024;
    const parts = [0, 1, 2].map((i) => data.subarray(i * size, (i + 1) * size));
    // Sent out of order, one twice with other bytes: the first copy stays.
    expect(await store.keepChunk(await receive(parts[2]!), id, 3)).toBe(true);
    expect(await store.keepChunk(await receive(parts[0]!), id, 1)).toBe(true);
    expect(await store.keepChunk(await receive(pdfBytes(10)), id, 1)).toBe(false);
    expect(await store.keepChunk(await receive(parts[1]!), id, 2)).toBe(true);
    expect(await store.chunkUploads()).toContain(id);

    const assembled = await store.assemble(id, [1, 2, 3], data.length);
    expect(assembled).toMatchObject({ size: data.length, sha1: sha1(data), head: data.subarray(0, 8) });
    const url = await store.keepAssembled(assembled, 'pdf');
    expect(url).toBe(`/pdf/${sha1(data)}.pdf`);
    expect((await bytesOf(await store.read(url))).equals(data)).toBe(true);
    expect(await subject.temporaries()).toEqual([]);

    await store.removeChunks(id);
    expect(await store.chunkUploads()).not.toContain(id);
  });

  it('receives into a hash begun elsewhere without digesting it, so that it goes on', async () => {
    const [first, second] = [pdfBytes(1000), pdfBytes(2000)];
    const running = createHash('sha1').update(first);
    const received = await store.receive(Readable.from([Buffer.from(second)]), 10_000, { hash: false, continueHash: running });
    expect(received).toMatchObject({ size: 2000, sha1: '', continued: running });
    expect(running.copy().digest('hex')).toBe(sha1(Buffer.concat([first, second])));
    await removeQuietly(received.path);
  });

  it('assembles with the hash given of the first chunks (a copy it digests), hashing only the rest', async () => {
    const id = uploadId();
    const data = pdfBytes(3 * 70_000 - 11);
    const parts = [0, 1, 2].map((i) => data.subarray(i * 70_000, (i + 1) * 70_000));
    for (const [i, part] of parts.entries()) expect(await store.keepChunk(await receive(part), id, i)).toBe(true);
    for (const chunks of [0, 1, 2, 3]) {
      const running = createHash('sha1');
      for (const part of parts.slice(0, chunks)) running.update(part);
      const assembled = await store.assemble(id, [0, 1, 2], data.length, { chunks, hash: running });
      expect(assembled).toMatchObject({ size: data.length, sha1: sha1(data), head: data.subarray(0, 8) });
      await store.discard(assembled);
    }
    // A wrong running hash gives a wrong address, never a wrong file: it is the caller's to keep true.
    const wrong = await store.assemble(id, [0, 1, 2], data.length, { chunks: 1, hash: createHash('sha1').update('other bytes') });
    expect(wrong.sha1).not.toBe(sha1(data));
    await store.discard(wrong);
    await store.removeChunks(id);
    expect(await subject.temporaries()).toEqual([]);
  });

  it('drops an assembly whose content address is taken, keeping the stored file', async () => {
    const id = uploadId();
    const data = pdfBytes(4000);
    const url = await store.keep(await receive(data), 'pdf');
    await store.keepChunk(await receive(data), id, 0);
    expect(await store.keepAssembled(await store.assemble(id, [0], data.length), 'pdf')).toBe(url);
    expect((await bytesOf(await store.read(url))).equals(data)).toBe(true);
    expect(await subject.temporaries()).toEqual([]);
    await store.removeChunks(id);
  });

  it('stops an assembly past the limit with a 413, leaving nothing behind', async () => {
    const id = uploadId();
    for (const i of [0, 1]) await store.keepChunk(await receive(pdfBytes(3000)), id, i);
    await expect(store.assemble(id, [0, 1], 5000)).rejects.toMatchObject({ status: 413 });
    expect(await subject.temporaries()).toEqual([]);
    await store.removeChunks(id);
  });

  it('removes one chunk, or all of an upload', async () => {
    const id = uploadId();
    for (const i of [0, 1]) await store.keepChunk(await receive(pdfBytes(100)), id, i);
    await store.removeChunk(id, 1);
    // Index 1 is free again: a new copy goes in.
    expect(await store.keepChunk(await receive(pdfBytes(100)), id, 1)).toBe(true);
    await store.removeChunks(id);
    expect(await store.chunkUploads()).not.toContain(id);
    // Removing what is not there is no error.
    await store.removeChunks(id);
    await store.removeChunk(id, 0);
  });

  it('sweeps the chunks of uploads that are gone once old, and temporaries left by a failure', async () => {
    const [live, orphan, recent] = [uploadId(), uploadId(), uploadId()];
    for (const id of [live, orphan]) await store.keepChunk(await receive(pdfBytes(100)), id, 0);
    // Older than now: every chunk written so far.
    const cutoff = Date.now() + 2000;
    await store.sweepOrphanChunks(new Set([live]), cutoff);
    const left = await store.chunkUploads();
    expect(left).toContain(live);
    expect(left).not.toContain(orphan);
    // Written after the cut-off: too recent to sweep, whoever it belongs to.
    await store.keepChunk(await receive(pdfBytes(100)), recent, 0);
    await store.sweepOrphanChunks(new Set(), 0);
    expect(await store.chunkUploads()).toContain(recent);

    // An assembly neither kept nor discarded (its process stopped), and a file half received.
    await store.assemble(live, [0], 1000);
    expect((await subject.temporaries()).length).toBeGreaterThan(0);
    await store.sweepTemporary(Date.now() - 60_000);
    expect((await subject.temporaries()).length).toBeGreaterThan(0);
    await store.sweepTemporary(Date.now() + 2000);
    expect(await subject.temporaries()).toEqual([]);
    for (const id of [live, recent]) await store.removeChunks(id);
  });
});
