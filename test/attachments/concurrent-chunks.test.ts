/**
 * What decides a chunked upload, under requests that arrive together on several connections:
 * several processes on one SQLite file, or a pool of PostgreSQL connections (when `DATABASE_URL`
 * names a PostgreSQL server: each run makes its own database there and drops it after).
 */
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase } from '../../db/knex.ts';
import { AttachmentsRepository } from '../../server/attachments/repository.ts';
import { dropTestDatabase, openTestDatabase, TEST_POSTGRES_URL } from '../helpers/database.ts';
import { tempDir } from '../helpers/server.ts';

/** Connections to one database, to spread requests over, and how to let go of them. */
interface Connections {
  all: Knex[];
  close(): Promise<void>;
}

/** Three Knex instances on one SQLite file, as three server processes on one data folder. */
async function sqlite(): Promise<Connections> {
  const dir = await tempDir();
  const all = [openDatabase({ dataDir: dir }), openDatabase({ dataDir: dir }), openDatabase({ dataDir: dir })];
  await migrateToLatest(all[0]!);
  return {
    all,
    async close() {
      for (const db of all) await db.destroy();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A new database on the PostgreSQL server, migrated, behind the service's pool of connections. */
async function postgres(): Promise<Connections> {
  const dir = await tempDir();
  const db = await openTestDatabase(dir);
  await migrateToLatest(db);
  return {
    all: [db],
    async close() {
      await db.destroy();
      await dropTestDatabase(dir);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const usesPostgres = TEST_POSTGRES_URL !== undefined;

describe.each([
  ['several connections to one SQLite file', sqlite, true],
  ['a pool of PostgreSQL connections', postgres, usesPostgres],
])('chunks of one upload recorded at once over %s', (_name, open, available) => {
  let connections: Connections;
  let repos: AttachmentsRepository[];
  const repo = (i: number) => repos[i % repos.length]!;

  beforeAll(async () => {
    if (!available) return;
    connections = await open();
    repos = connections.all.map((db) => new AttachmentsRepository(db));
    await connections.all[0]!('profiles').insert({ id: '~Concurrent_Uploader1', state: 'Active', content: '{}', past_states: '[]', tcdate: 0, tmdate: 0 });
  });
  afterAll(async () => {
    await connections?.close();
  });

  const newUpload = (clientUploadId: string) =>
    repo(0).openUpload({ id: randomUUID(), profileId: '~Concurrent_Uploader1', clientUploadId, invitation: 'V/-/Submission', field: 'pdf', extension: 'pdf', totalChunks: 40 }, Date.now());
  const receivedBytes = async (id: string) => Number((await connections.all[0]!('chunked_uploads').where({ id }).first('received_bytes')).received_bytes);
  const recordedBytes = async (id: string) => Number((await connections.all[0]!('upload_chunks').where({ upload_id: id }).sum({ total: 'size' }).first())?.total ?? 0);

  it.skipIf(!available)('never count past the limit: as many as fit are recorded, the others refused', async () => {
    const upload = await newUpload('at-once');
    const outcomes = await Promise.all(Array.from({ length: 20 }, (_, i) => repo(i).recordChunk(upload.id, i, 1000, 10_000, Date.now())));
    expect(outcomes.filter((o) => o === 'recorded')).toHaveLength(10);
    expect(outcomes.filter((o) => o === 'too-large')).toHaveLength(10);
    expect(await receivedBytes(upload.id)).toBe(10_000);
    expect(await recordedBytes(upload.id)).toBe(10_000);
  });

  it.skipIf(!available)('count a chunk sent many times at once only once', async () => {
    const upload = await newUpload('retried');
    const outcomes = await Promise.all(Array.from({ length: 12 }, (_, i) => repo(i).recordChunk(upload.id, 7, 1000, 10_000, Date.now())));
    expect(new Set(outcomes)).toEqual(new Set(['recorded']));
    expect(await receivedBytes(upload.id)).toBe(1000);
    expect((await repo(0).standing(upload.id)).upload?.chunks).toEqual(new Map([[7, 1000]]));
  });

  it.skipIf(!available)('read where an upload stands with the other requests under way, and nothing for an upload gone', async () => {
    const upload = await newUpload('standing');
    await repo(1).recordChunk(upload.id, 0, 1000, 10_000, Date.now());
    await repo(2).recordChunk(upload.id, 3, 500, 10_000, Date.now());
    const now = Date.now();
    await repo(0).arrive({ id: 'mine', profileId: '~Concurrent_Uploader1', clientUploadId: 'standing', holder: 'p0' }, now, now + 15_000);
    await repo(1).arrive({ id: 'theirs', profileId: '~Concurrent_Uploader1', clientUploadId: 'standing', holder: 'p1' }, now, now + 15_000);
    const arriving = { profileId: '~Concurrent_Uploader1', clientUploadId: 'standing', except: 'mine', now };
    const receiving = { status: 'receiving', url: null, chunks: new Map([[0, 1000], [3, 500]]), indexBase: null };
    expect(await repo(2).standing(upload.id, arriving)).toEqual({ upload: receiving, others: [{ id: 'theirs', holder: 'p1' }] });
    expect(await repo(0).standing(upload.id)).toEqual({ upload: receiving, others: [] });
    await repo(0).deleteUpload(upload.id);
    expect(await repo(1).standing(upload.id, arriving)).toEqual({ upload: null, others: [{ id: 'theirs', holder: 'p1' }] });
    const fresh = await newUpload('standing-empty');
    expect(await repo(0).standing(fresh.id)).toEqual({ upload: { status: 'receiving', url: null, chunks: new Map(), indexBase: null }, others: [] });
    // Finished (as `finish` leaves it: done, with its URL, its chunks' rows gone).
    await connections.all[0]!('chunked_uploads').where({ id: fresh.id }).update({ status: 'done', url: '/pdf/standing.pdf' });
    expect(await repo(0).standing(fresh.id)).toEqual({ upload: { status: 'done', url: '/pdf/standing.pdf', chunks: new Map(), indexBase: null }, others: [] });
  });

  it.skipIf(!available)("read a person's upload by its client id with its chunks, and nothing for another id", async () => {
    const upload = await newUpload('with-chunks');
    expect(await repo(1).findUploadWithChunks('~Concurrent_Uploader1', 'with-chunks')).toEqual({ upload, chunks: new Map() });
    await repo(0).recordChunk(upload.id, 2, 700, 10_000, upload.updatedAt);
    await repo(0).recordChunk(upload.id, 5, 300, 10_000, upload.updatedAt);
    expect(await repo(2).findUploadWithChunks('~Concurrent_Uploader1', 'with-chunks')).toEqual({ upload, chunks: new Map([[2, 700], [5, 300]]) });
    expect(await repo(0).findUploadWithChunks('~Concurrent_Uploader1', 'no-such-upload')).toBeNull();
    expect(await repo(0).findUploadWithChunks('~Someone_Else1', 'with-chunks')).toBeNull();
  });

  it.skipIf(!available)('answer "gone" once the upload was refused meanwhile', async () => {
    const upload = await newUpload('refused');
    await repo(1).deleteUpload(upload.id);
    expect(await repo(2).recordChunk(upload.id, 0, 10, 10_000, Date.now())).toBe('gone');
  });

  it.skipIf(!available)('move the upload on with each chunk recorded while it receives, and record nothing for an upload finished', async () => {
    const upload = await newUpload('touched');
    const updatedAt = async () => Number((await connections.all[0]!('chunked_uploads').where({ id: upload.id }).first('updated_at')).updated_at);
    expect(await repo(1).recordChunk(upload.id, 0, 1000, 10_000, 5_000_000_000_000)).toBe('recorded');
    expect(await updatedAt()).toBe(5_000_000_000_000);
    // A chunk sent again over the limit is the chunk recorded before, not a refusal.
    expect(await repo(2).recordChunk(upload.id, 0, 1000, 1500, 5_000_000_000_001)).toBe('recorded');
    expect(await receivedBytes(upload.id)).toBe(1000);
    // While it is assembled, `updated_at` is the assembler's lease: a chunk does not move it.
    expect(await repo(0).claimAssembly(upload.id, 'assembler', 6_000_000_000_000, 0)).toBe(true);
    expect(await repo(1).recordChunk(upload.id, 1, 1000, 10_000, 7_000_000_000_000)).toBe('recorded');
    expect([await updatedAt(), await receivedBytes(upload.id)]).toEqual([6_000_000_000_000, 2000]);
    await connections.all[0]!('chunked_uploads').where({ id: upload.id }).update({ status: 'done', url: '/pdf/touched.pdf' });
    expect(await repo(2).recordChunk(upload.id, 2, 1000, 10_000, Date.now())).toBe('finished');
    expect((await repo(0).standing(upload.id)).upload?.chunks).toEqual(new Map([[0, 1000], [1, 1000]]));
  });

  it.skipIf(!available)('leave chunks recorded as the code before the trigger did to that code, which counts them itself (processes not yet upgraded)', async () => {
    const upload = await newUpload('upgrading');
    await connections.all[0]!('upload_chunks').insert({ upload_id: upload.id, chunk_index: 0, size: 250 });
    await connections.all[0]!('chunked_uploads').where({ id: upload.id }).increment('received_bytes', 250);
    expect(await repo(1).recordChunk(upload.id, 1, 250, 500, Date.now())).toBe('recorded');
    expect(await repo(2).recordChunk(upload.id, 2, 250, 500, Date.now())).toBe('too-large');
    expect(await receivedBytes(upload.id)).toBe(500);
  });

  it.skipIf(!available)('let exactly one of many claim the assembly', async () => {
    const upload = await newUpload('claimed');
    const now = Date.now();
    const claims = await Promise.all(Array.from({ length: 10 }, (_, i) => repo(i).claimAssembly(upload.id, `holder-${i}`, now, now - 15_000)));
    expect(claims.filter(Boolean)).toHaveLength(1);
  });

  /** The other chunk requests of the upload `together` that connection `i` sees, as a chunk request reads them (with where the upload stands). */
  const othersArriving = async (i: number, except: string, now: number) =>
    (await repo(i).standing('no-such-upload', { profileId: '~Concurrent_Uploader1', clientUploadId: 'together', except, now })).others;

  it.skipIf(!available)('see the chunk requests under way, whichever connection noted them, until they leave', async () => {
    const now = Date.now();
    const lease = now + 15_000;
    await repo(0).arrive({ id: 'a', profileId: '~Concurrent_Uploader1', clientUploadId: 'together', holder: 'p0' }, now, lease);
    await repo(1).arrive({ id: 'b', profileId: '~Concurrent_Uploader1', clientUploadId: 'together', holder: 'p1' }, now, lease);
    expect(await othersArriving(2, 'a', now)).toEqual([{ id: 'b', holder: 'p1' }]);
    expect(await repo(0).holdersStillArriving(['b'], now)).toEqual(['p1']);
    await repo(2).leave('b');
    expect(await repo(0).holdersStillArriving(['b'], now)).toEqual([]);
    expect(await othersArriving(0, 'a', now)).toEqual([]);
    // One whose lease its process stopped renewing was cut by a stop of that process: not waited for.
    await repo(1).arrive({ id: 'c', profileId: '~Concurrent_Uploader1', clientUploadId: 'together', holder: 'p1' }, now - 60_000, now - 45_000);
    expect(await othersArriving(0, 'a', now)).toEqual([]);
    // Renewed, it is waited for again.
    await repo(1).renewArrivals(['c'], lease);
    expect(await repo(0).holdersStillArriving(['c'], now)).toEqual(['p1']);
  });
});
