import type { Knex } from 'knex';
import { rawRows } from '../../db/knex.ts';
import { isPostgres } from '../../db/postgres.ts';

/**
 * A chunk's record (`recordChunk`): its row, selected from its upload's while the upload is not
 * done and within its limit; the trigger `upload_chunk_counted` counts it. Written by hand, as
 * Knex leaves `ON CONFLICT` and `RETURNING` out of SQLite's `INSERT … SELECT`; the casts give
 * PostgreSQL the parameters' types.
 */
const RECORD_CHUNK = `insert into upload_chunks (upload_id, chunk_index, size, recorded_at)
  select id, cast(? as integer), cast(? as bigint), cast(? as bigint) from chunked_uploads
  where id = ? and status <> 'done' and received_bytes + ? <= ?
  on conflict (upload_id, chunk_index) do nothing
  returning chunk_index`;

export type UploadStatus = 'receiving' | 'assembling' | 'done';

export interface ChunkedUpload {
  id: string;
  profileId: string;
  clientUploadId: string;
  invitation: string;
  field: string;
  extension: string;
  totalChunks: number;
  indexBase: 0 | 1 | null;
  status: UploadStatus;
  url: string | null;
  updatedAt: number;
  /** While assembling: who holds the lease (see `claimAssembly`). */
  assemblyOwner: string | null;
}

interface UploadRow {
  id: string;
  profile_id: string;
  client_upload_id: string;
  invitation: string;
  field: string;
  extension: string;
  total_chunks: number;
  index_base: number | null;
  status: string;
  url: string | null;
  created_at: number;
  updated_at: number;
  assembly_owner: string | null;
}

/** How an upload's client counts, as stored (null until a chunk tells). */
function indexBaseOf(row: { index_base: number | null }): 0 | 1 | null {
  return row.index_base === null ? null : (Number(row.index_base) as 0 | 1);
}

/** Adds a chunk read by a left join of an upload's chunks (none when the upload has no chunk yet). */
function addChunk(chunks: Map<number, number>, row: { chunk_index: number | null; size: number | null }): void {
  if (row.chunk_index !== null) chunks.set(Number(row.chunk_index), Number(row.size));
}

function toUpload(row: UploadRow): ChunkedUpload {
  return {
    id: row.id,
    profileId: row.profile_id,
    clientUploadId: row.client_upload_id,
    invitation: row.invitation,
    field: row.field,
    extension: row.extension,
    totalChunks: Number(row.total_chunks),
    indexBase: indexBaseOf(row),
    status: row.status as UploadStatus,
    url: row.url,
    updatedAt: Number(row.updated_at),
    assemblyOwner: row.assembly_owner ?? null,
  };
}

/** A stored file as recorded for its uploader: what a note's `file` field may then hold. */
export interface UploadRecord {
  profileId: string;
  invitation: string;
  field: string;
  url: string;
  size: number;
  sha1: string;
}

/**
 * Where an upload stands (`AttachmentsRepository.standing`): its status and URL, how its client
 * counts, and its chunks recorded (none once it is done: they go with the transaction that
 * finishes it).
 */
export interface UploadStanding {
  status: ChunkedUpload['status'];
  url: string | null;
  chunks: Map<number, number>;
  indexBase: 0 | 1 | null;
}

/** SQL for uploads: the files each user stored, and chunked uploads with their chunks. */
export class AttachmentsRepository {
  readonly #db: Knex;

  constructor(db: Knex) {
    this.#db = db;
  }

  /** How many of the person's chunked uploads are unfinished. */
  async openUploadCount(profileId: string): Promise<number> {
    const row = await this.#db('chunked_uploads').where({ profile_id: profileId }).whereNot({ status: 'done' }).count({ n: '*' }).first();
    return Number(row?.n ?? 0);
  }

  /**
   * The upload of `(profile, clientUploadId)`, created on its first chunk (with how its client
   * counts, when that chunk tells), or as another request created it first.
   */
  async openUpload(upload: Omit<ChunkedUpload, 'indexBase' | 'status' | 'url' | 'updatedAt' | 'assemblyOwner'> & { indexBase?: 0 | 1 | null }, now: number): Promise<ChunkedUpload> {
    await this.#db('chunked_uploads')
      .insert({
        id: upload.id,
        profile_id: upload.profileId,
        client_upload_id: upload.clientUploadId,
        invitation: upload.invitation,
        field: upload.field,
        extension: upload.extension,
        total_chunks: upload.totalChunks,
        index_base: upload.indexBase ?? null,
        status: 'receiving',
        created_at: now,
        updated_at: now,
      })
      .onConflict(['profile_id', 'client_upload_id'])
      .ignore();
    const row = await this.#db<UploadRow>('chunked_uploads')
      .where({ profile_id: upload.profileId, client_upload_id: upload.clientUploadId })
      .first();
    if (!row) throw new Error('chunked upload vanished');
    return toUpload(row);
  }

  /** A person's upload by the id their client gave it. */
  async findUploadOf(profileId: string, clientUploadId: string): Promise<ChunkedUpload | null> {
    const row = await this.#db<UploadRow>('chunked_uploads').where({ profile_id: profileId, client_upload_id: clientUploadId }).first();
    return row ? toUpload(row) : null;
  }

  /** A person's upload by the id their client gave it, with its chunks recorded, in one statement. */
  async findUploadWithChunks(profileId: string, clientUploadId: string): Promise<{ upload: ChunkedUpload; chunks: Map<number, number> } | null> {
    const rows: Array<UploadRow & { chunk_index: number | null; size: number | null }> = await this.#db('chunked_uploads as u')
      .leftJoin('upload_chunks as c', 'c.upload_id', 'u.id')
      .where({ 'u.profile_id': profileId, 'u.client_upload_id': clientUploadId })
      .select('u.*', 'c.chunk_index', 'c.size');
    if (rows.length === 0) return null;
    const chunks = new Map<number, number>();
    for (const row of rows) addChunk(chunks, row);
    return { upload: toUpload(rows[0]!), chunks };
  }

  async findUpload(id: string): Promise<ChunkedUpload | null> {
    const row = await this.#db<UploadRow>('chunked_uploads').where({ id }).first();
    return row ? toUpload(row) : null;
  }

  /**
   * Records how the client counts, once, and answers the upload's row as it then is (null when
   * it is gone): its `indexBase` is another than `base` when it was already known otherwise.
   */
  async settleIndexBase(id: string, base: 0 | 1): Promise<ChunkedUpload | null> {
    await this.#db('chunked_uploads').where({ id }).whereNull('index_base').update({ index_base: base });
    return this.findUpload(id);
  }

  /**
   * Records a chunk with its checks, in one statement: the chunk's row is inserted from its
   * upload's row only while the upload is not done and the bytes it received stay within
   * `maxBytes` with this chunk's, and a trigger counts its bytes into the upload's row and moves
   * its `updated_at` on (migration `20261127200000_chunk_record_counts_itself`), so the count
   * and the record are one. A chunk already recorded (a retry) keeps its first record and is
   * not counted again (nor does it move `updated_at` on). On SQLite, which writes one statement
   * at a time, that is all; on PostgreSQL the upload's row is locked first, in a read-committed
   * transaction (as `exclusively` takes), so chunks arriving together on several connections
   * wait for each other and are then counted one after the other, each reading the count as the
   * one before left it, where a serialisable transaction would fail and be run again; and no
   * request deletes the upload meanwhile. When nothing was recorded, one more read tells why: the
   * upload is gone (another request refused it meanwhile), finished (a chunk whose upload was
   * read before its body arrived), already holds the chunk (`recorded`), or the chunk is over
   * the limit.
   */
  async recordChunk(uploadId: string, index: number, size: number, maxBytes: number, now: number): Promise<'recorded' | 'gone' | 'finished' | 'too-large'> {
    const db = this.#db;
    const record = async (q: Knex | Knex.Transaction) => rawRows(await q.raw(RECORD_CHUNK, [index, size, now, uploadId, size, maxBytes])).length > 0;
    const recorded = isPostgres(db)
      ? await db.transaction(async (trx) => (await trx('chunked_uploads').where({ id: uploadId }).forUpdate().first('id')) !== undefined && (await record(trx)), {
          isolationLevel: 'read committed',
        })
      : await record(db);
    if (recorded) return 'recorded';
    const row: { status: string; kept: unknown } | undefined = await db('chunked_uploads')
      .where({ id: uploadId })
      .first('status', db.raw('exists (select 1 from upload_chunks where upload_id = ? and chunk_index = ?) as kept', [uploadId, index]));
    if (!row) return 'gone';
    if (row.status === 'done') return 'finished';
    return row.kept === true || Number(row.kept) === 1 ? 'recorded' : 'too-large';
  }

  /**
   * Notes a chunk request as under way, until `leave`: chunks of one upload sent together wait for
   * each other. `holder` is the process serving it, whose lease on the note lasts until
   * `heldUntil` unless `renewArrivals` moves it on.
   */
  async arrive(arrival: { id: string; profileId: string; clientUploadId: string; holder: string }, now: number, heldUntil: number): Promise<void> {
    await this.#db('upload_arrivals').insert({
      id: arrival.id,
      profile_id: arrival.profileId,
      client_upload_id: arrival.clientUploadId,
      arrived_at: now,
      holder: arrival.holder,
      held_until: heldUntil,
    });
  }

  async renewArrivals(arrivalIds: string[], heldUntil: number): Promise<void> {
    await this.#db('upload_arrivals').whereIn('id', arrivalIds).update({ held_until: heldUntil });
  }

  async leave(arrivalId: string): Promise<void> {
    await this.#db('upload_arrivals').where({ id: arrivalId }).delete();
  }

  /** The holders of those of these chunk requests whose lease still holds at `now`. */
  async holdersStillArriving(arrivalIds: string[], now: number): Promise<string[]> {
    return this.#db('upload_arrivals').whereIn('id', arrivalIds).where('held_until', '>', now).pluck('holder');
  }

  /** Every process that holds a chunk request, for the start-up clean-up to tell stopped ones. */
  async arrivalHolders(): Promise<string[]> {
    return this.#db('upload_arrivals').distinct('holder').pluck('holder');
  }

  /** Arrivals whose lease ran out before `now`, or of these holders (processes that stopped mid-request). */
  async sweepArrivals(now: number, goneHolders: string[] = []): Promise<number> {
    return this.#db('upload_arrivals')
      .where('held_until', '<=', now)
      .orWhereIn('holder', goneHolders)
      .delete();
  }

  /** Every upload id there is, for the sweep to tell orphaned chunk folders from live ones. */
  /** Every upload whose chunks the store may hold: chunked ones and tus ones (`tus.ts`). */
  async uploadIds(): Promise<Set<string>> {
    return new Set([...(await this.#db('chunked_uploads').pluck('id')), ...(await this.#db('tus_uploads').pluck('id'))]);
  }

  /**
   * Where an upload stands, as of one moment (one statement): its chunks and how its client
   * counts (`upload`, null when the upload is gone), and with `arriving`, the person's other
   * chunk requests of it whose lease still holds at `now` (`others`, with their holders). A chunk
   * request asks this once it has recorded its chunk and stopped counting as under way: every
   * other chunk sent with it is then in one of the two (an arrival is noted before its chunk is
   * recorded, and leaves only after).
   */
  async standing(
    uploadId: string,
    arriving?: { profileId: string; clientUploadId: string; except: string; now: number },
  ): Promise<{ upload: UploadStanding | null; others: Array<{ id: string; holder: string }> }> {
    const db = this.#db;
    const upload = db('chunked_uploads as u')
      .leftJoin('upload_chunks as c', 'c.upload_id', 'u.id')
      .where('u.id', uploadId)
      .select(db.raw("'upload' as kind"), 'u.status', 'u.url', 'u.index_base', 'c.chunk_index', 'c.size', db.raw('null as arrival'), db.raw('null as holder'));
    const query = arriving
      ? upload.unionAll(
          db('upload_arrivals')
            .where({ profile_id: arriving.profileId, client_upload_id: arriving.clientUploadId })
            .whereNot({ id: arriving.except })
            .where('held_until', '>', arriving.now)
            .select(db.raw("'arrival'"), db.raw('null'), db.raw('null'), db.raw('null'), db.raw('null'), db.raw('null'), 'id', 'holder'),
        )
      : upload;
    const rows: Array<{
      kind: string;
      status: ChunkedUpload['status'] | null;
      url: string | null;
      index_base: number | null;
      chunk_index: number | null;
      size: number | null;
      arrival: string | null;
      holder: string | null;
    }> = await query;
    let found: UploadStanding | null = null;
    const others: Array<{ id: string; holder: string }> = [];
    for (const row of rows) {
      if (row.kind === 'arrival') {
        others.push({ id: row.arrival!, holder: row.holder! });
        continue;
      }
      found ??= { status: row.status!, url: row.url, chunks: new Map(), indexBase: indexBaseOf(row) };
      addChunk(found.chunks, row);
    }
    return { upload: found, others };
  }

  /**
   * Claims the assembly of a complete upload for `owner`: `UPDATE … SET status = 'assembling'
   * WHERE status = 'receiving'` changes exactly one row for exactly one request. The claim is a
   * lease: its holder renews `updated_at` while it works (`renewAssembly`), and an assembly not
   * renewed since `staleBefore` (its process stopped, on whatever machine) may be claimed again.
   */
  async claimAssembly(id: string, owner: string, now: number, staleBefore: number): Promise<boolean> {
    const changed = await this.#db('chunked_uploads')
      .where({ id })
      .andWhere((q) => q.where({ status: 'receiving' }).orWhere((stale) => stale.where({ status: 'assembling' }).andWhere('updated_at', '<', staleBefore)))
      .update({ status: 'assembling', assembly_owner: owner, updated_at: now });
    return changed === 1;
  }

  /** Takes over an assembly whose lease ran out; only one of several takers gets it. */
  async takeOverAssembly(id: string, from: string | null, owner: string, now: number): Promise<boolean> {
    const changed = await this.#db('chunked_uploads')
      .where({ id, status: 'assembling' })
      .andWhere((q) => (from === null ? q.whereNull('assembly_owner') : q.where({ assembly_owner: from })))
      .update({ assembly_owner: owner, updated_at: now });
    return changed === 1;
  }

  /** Renews an assembly's lease; false when `owner` no longer holds it (it ran out and was taken over). */
  async renewAssembly(id: string, owner: string, now: number): Promise<boolean> {
    return (await this.#db('chunked_uploads').where({ id, status: 'assembling', assembly_owner: owner }).update({ updated_at: now })) === 1;
  }

  /** Every assembly under way, with its holder and when its lease was last renewed. */
  async assemblies(): Promise<Array<{ id: string; owner: string | null; renewedAt: number }>> {
    const rows: Array<{ id: string; assembly_owner: string | null; updated_at: number }> = await this.#db('chunked_uploads')
      .where({ status: 'assembling' })
      .select('id', 'assembly_owner', 'updated_at');
    return rows.map((r) => ({ id: r.id, owner: r.assembly_owner, renewedAt: Number(r.updated_at) }));
  }

  /** Of these upload ids, the finished ones (their chunks are no longer needed). */
  async finishedAmong(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    return this.#db('chunked_uploads').whereIn('id', ids).where({ status: 'done' }).pluck('id');
  }

  /**
   * Records the assembled file as the uploader's, and the upload as done, in one transaction:
   * a process stopped in between leaves neither, and the assembly is simply redone. Only the
   * lease's holder finishes: false when `owner` lost it (another process took it over and
   * finishes it, or has).
   */
  async finish(id: string, owner: string, upload: UploadRecord, now: number): Promise<boolean> {
    return this.#db.transaction(async (trx) => {
      const changed = await trx('chunked_uploads')
        .where({ id, status: 'assembling', assembly_owner: owner })
        .update({ status: 'done', url: upload.url, assembly_owner: null, updated_at: now });
      if (changed !== 1) return false;
      await new AttachmentsRepository(trx).recordUpload(upload, now);
      await trx('upload_chunks').where({ upload_id: id }).delete();
      return true;
    });
  }

  /** Gives an assembly that failed back to the receiving state. */
  async release(id: string, now: number, owner?: string | null): Promise<void> {
    const q = this.#db('chunked_uploads').where({ id, status: 'assembling' });
    if (owner !== undefined) q.andWhere((o) => (owner === null ? o.whereNull('assembly_owner') : o.where({ assembly_owner: owner })));
    await q.update({ status: 'receiving', assembly_owner: null, updated_at: now });
  }

  async deleteUpload(id: string): Promise<void> {
    await this.#db('chunked_uploads').where({ id }).delete();
  }

  /** Uploads last touched before `before`: unfinished ones are abandoned, finished ones spent. */
  async staleUploads(before: number): Promise<string[]> {
    return this.#db('chunked_uploads').where('updated_at', '<', before).pluck('id');
  }

  async recordUpload(upload: UploadRecord, now: number): Promise<void> {
    await this.#db('uploads').insert({
      profile_id: upload.profileId,
      invitation: upload.invitation,
      field: upload.field,
      url: upload.url,
      size: upload.size,
      sha1: upload.sha1,
      created_at: now,
    });
  }

  /** Whether `profileId` ever uploaded `url`. */
  async isUploader(profileId: string, url: string): Promise<boolean> {
    return (await this.#db('uploads').where({ profile_id: profileId, url }).first('id')) !== undefined;
  }

  /** Whether `profileId` uploaded `url` for this invitation and field. */
  async uploadedBy(profileId: string, url: string, invitation: string, field: string): Promise<boolean> {
    const row = await this.#db('uploads').where({ profile_id: profileId, url, invitation, field }).first('id');
    return row !== undefined;
  }

  /** What one person uploaded (names, not contents): their data export's (`accounts/your-data.ts`). */
  async uploadsOf(profileId: string): Promise<Array<{ url: string; invitation: string; field: string; size: number; createdAt: number }>> {
    const rows: Array<{ url: string; invitation: string; field: string; size: unknown; created_at: unknown }> = await this.#db('uploads').where({ profile_id: profileId }).orderBy('created_at').select('url', 'invitation', 'field', 'size', 'created_at');
    return rows.map((row) => ({ url: row.url, invitation: row.invitation, field: row.field, size: Number(row.size), createdAt: Number(row.created_at) }));
  }

  /** Uploads by one user in the last hour. */
  async recentUploadCount(profileId: string, since: number): Promise<number> {
    const row = await this.#db('uploads').where({ profile_id: profileId }).where('created_at', '>=', since).count({ n: '*' }).first();
    return Number(row?.n ?? 0);
  }
}
