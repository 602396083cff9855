import type { Knex } from 'knex';
import type { SpanPart } from './store/file-store.ts';

/** A tus upload as its row holds it (`create_tus_uploads`). */
export interface TusUpload {
  id: string;
  profileId: string;
  invitation: string;
  field: string;
  extension: string;
  metadata: string;
  /** Null while deferred (`Upload-Defer-Length`). */
  length: number | null;
  offset: number;
  /** How many chunks of the store hold its bytes, numbered from 1. */
  parts: number;
  concat: 'partial' | 'final' | null;
  /** A final upload's `Upload-Concat` (`final;` and its parts' URLs). */
  concatHeader: string | null;
  /** A final upload's parts, as one key (`finalKey`): one final upload per person and key. */
  concatKey: string | null;
  /** A partial upload's place on the local disk: its first byte's position in its span's data file (0 for any other upload). */
  spanAt: number;
  /** A partial upload's span (the id of its first upload, `tus-spans.ts`) and its place among the span's parts (from 1); null outside one. */
  span: string | null;
  spanPart: number | null;
  writer: string | null;
  writerUntil: number | null;
  url: string | null;
  createdAt: number;
  expiresAt: number;
}

/** A tus upload as it is first recorded: before any byte, any writer, any file. */
export type NewTusUpload = Omit<TusUpload, 'offset' | 'parts' | 'writer' | 'writerUntil' | 'url' | 'concatHeader' | 'concatKey' | 'spanAt' | 'span' | 'spanPart'>;

/** A span sent as an S3 multipart upload (`tus_spans`). */
export interface TusSpan {
  id: string;
  uploadId: string;
  /** The parts whose bytes are in the multipart upload, by part number. */
  kept: SpanPart[];
  settled: boolean;
}


interface Row {
  id: string;
  profile_id: string;
  invitation: string;
  field: string;
  extension: string;
  metadata: string;
  upload_length: number | string | null;
  upload_offset: number | string;
  parts: number | string;
  concat: 'partial' | 'final' | null;
  concat_header: string | null;
  concat_key: string | null;
  span_at: number | string | null;
  span: string | null;
  span_part: number | string | null;
  writer: string | null;
  writer_until: number | string | null;
  url: string | null;
  created_at: number | string;
  expires_at: number | string;
}

const toUpload = (r: Row): TusUpload => ({
  id: r.id,
  profileId: r.profile_id,
  invitation: r.invitation,
  field: r.field,
  extension: r.extension,
  metadata: r.metadata,
  length: r.upload_length === null ? null : Number(r.upload_length),
  offset: Number(r.upload_offset),
  parts: Number(r.parts),
  concat: r.concat,
  concatHeader: r.concat_header,
  concatKey: r.concat_key,
  spanAt: r.span_at === null ? 0 : Number(r.span_at),
  span: r.span,
  spanPart: r.span_part === null ? null : Number(r.span_part),
  writer: r.writer,
  writerUntil: r.writer_until === null ? null : Number(r.writer_until),
  url: r.url,
  createdAt: Number(r.created_at),
  expiresAt: Number(r.expires_at),
});

/** The SQL of tus uploads. Every write that moves an upload on is conditional on the row as read. */
export class TusRepository {
  readonly #db: Knex;

  constructor(db: Knex) {
    this.#db = db;
  }

  async create(
    upload: NewTusUpload & { concatHeader?: string | null; concatKey?: string | null },
    span?: { id: string; at: number; end: number | null; part: number },
  ): Promise<void> {
    await this.#db('tus_uploads').insert({
      ...(span ? { span: span.id, span_at: span.at, span_end: span.end, span_part: span.part, span_parts: span.end === null ? null : 1 } : {}),
      id: upload.id,
      profile_id: upload.profileId,
      invitation: upload.invitation,
      field: upload.field,
      extension: upload.extension,
      metadata: upload.metadata,
      upload_length: upload.length,
      upload_offset: 0,
      parts: 0,
      concat: upload.concat,
      concat_header: upload.concatHeader ?? null,
      concat_key: upload.concatKey ?? null,
      url: null,
      created_at: upload.createdAt,
      expires_at: upload.expiresAt,
    });
  }

  /** The person's upload of that id; another person's does not exist for them. */
  async findOf(profileId: string, id: string): Promise<TusUpload | null> {
    const row = (await this.#db('tus_uploads').where({ id, profile_id: profileId }).first()) as Row | undefined;
    return row ? toUpload(row) : null;
  }

  /**
   * Takes the upload for one writing request: only at the offset the request names, and only
   * while nobody else writes it (or the one who did stopped: its lease ran out). Answers whether
   * it was taken.
   */
  async take(id: string, offset: number, writer: string, now: number, until: number): Promise<boolean> {
    const changed = await this.#db('tus_uploads')
      .where({ id, upload_offset: offset })
      .whereNull('url')
      .where((q) => q.whereNull('writer').orWhere('writer_until', '<', now))
      .update({ writer, writer_until: until });
    return changed === 1;
  }

  /** Keeps the lease while a long request runs; false when it is no longer the writer's. */
  async renew(id: string, writer: string, until: number): Promise<boolean> {
    return (await this.#db('tus_uploads').where({ id, writer }).update({ writer_until: until })) === 1;
  }

  /** Takes the lease of a writer whose process is gone (it can no longer let go itself). */
  async takeOver(id: string, gone: string, writer: string, until: number): Promise<boolean> {
    return (await this.#db('tus_uploads').where({ id, writer: gone }).whereNull('url').update({ writer, writer_until: until })) === 1;
  }

  /** How many unfinished uploads a person has. */
  async openCount(profileId: string): Promise<number> {
    const row = (await this.#db('tus_uploads').where({ profile_id: profileId }).whereNull('url').count({ n: '*' }).first()) as { n: number | string } | undefined;
    return Number(row?.n ?? 0);
  }

  /**
   * The person's latest span still open for a partial upload of that field with that metadata,
   * begun since `since`: its first upload's id, where the next part would go and how many parts it has.
   */
  async openSpan(profileId: string, fields: { invitation: string; field: string; metadata: string }, since: number): Promise<{ id: string; end: number; parts: number } | null> {
    const row = (await this.#db('tus_uploads')
      .where({ profile_id: profileId, concat: 'partial', invitation: fields.invitation, field: fields.field, metadata: fields.metadata })
      .whereRaw('span = id')
      .whereNotNull('span_end')
      .whereNull('url')
      .where('created_at', '>=', since)
      .orderBy('created_at', 'desc')
      .first('id', 'span_end', 'span_parts')) as { id: string; span_end: number | string; span_parts: number | string | null } | undefined;
    return row ? { id: row.id, end: Number(row.span_end), parts: Number(row.span_parts ?? 0) } : null;
  }

  /**
   * Takes `length` bytes at the end of a span and its next part number, if its end and its part
   * count are still `end` and `parts` (nobody took them meanwhile; an empty part moves only the count).
   */
  async extendSpan(id: string, end: number, parts: number, length: number): Promise<boolean> {
    return (await this.#db('tus_uploads').where({ id, span_end: end, span_parts: parts }).update({ span_end: end + length, span_parts: parts + 1 })) === 1;
  }

  /** Records a span sent as an S3 multipart upload. */
  async createSpan(id: string, uploadId: string, now: number): Promise<void> {
    await this.#db('tus_spans').insert({ id, upload_id: uploadId, kept: '', settled: false, created_at: now });
  }

  async findSpan(id: string): Promise<TusSpan | null> {
    const row = (await this.#db('tus_spans').where({ id }).first()) as { id: string; upload_id: string; kept: string; settled: boolean | number } | undefined;
    if (!row) return null;
    const kept = row.kept.split('\n').filter(Boolean).map((line) => {
      const [part, etag, size] = line.split(' ');
      return { part: Number(part), etag: etag ?? '', size: Number(size) };
    });
    return { id: row.id, uploadId: row.upload_id, kept, settled: Boolean(row.settled) };
  }

  /**
   * Adds a part sent to the span's multipart upload, in one statement: only while the span is
   * not settled and the part is not there already (the first one stays). Answers whether it was added.
   */
  async keepSpanPart(id: string, part: SpanPart): Promise<boolean> {
    const changed = await this.#db('tus_spans')
      .where({ id, settled: false })
      .whereNot('kept', 'like', `%\n${Math.trunc(part.part)} %`)
      .update({ kept: this.#db.raw('kept || cast(? as text)', [`\n${Math.trunc(part.part)} ${part.etag} ${Math.trunc(part.size)}`]) });
    return changed === 1;
  }

  /** No longer counts a part (a request sent it again with another length), while the span is not settled. */
  async dropSpanPart(id: string, part: SpanPart): Promise<boolean> {
    const line = `\n${Math.trunc(part.part)} ${part.etag} ${Math.trunc(part.size)}`;
    return (await this.#db('tus_spans').where({ id, settled: false }).update({ kept: this.#db.raw('replace(kept, cast(? as text), cast(? as text))', [line, '']) })) === 1;
  }

  /**
   * The span takes no more parts: its multipart upload is being completed. Every part added before
   * is in what `findSpan` answers after it (both touch the one row), and none is added after.
   */
  async settleSpan(id: string): Promise<void> {
    await this.#db('tus_spans').where({ id }).update({ settled: true });
  }

  async removeSpan(id: string): Promise<void> {
    await this.#db('tus_spans').where({ id }).delete();
  }

  /** Whether any upload of the span is left (its parts, or the ordinary upload whose own it is). */
  async spanInUse(id: string): Promise<boolean> {
    return (await this.#db('tus_uploads').where({ span: id }).orWhere({ id }).first('id')) !== undefined;
  }

  /** Spans that no upload refers to any more, recorded before `before` (a crash came between an upload's end and its span's). */
  async orphanSpans(before: number): Promise<string[]> {
    const rows = (await this.#db('tus_spans')
      .where('created_at', '<', before)
      .whereNotExists((q) => q.select('id').from('tus_uploads').whereRaw('tus_uploads.span = tus_spans.id or tus_uploads.id = tus_spans.id'))
      .select('id')) as Array<{ id: string }>;
    return rows.map((row) => row.id);
  }

  /** The spans of these uploads take no more parts. */
  async closeSpans(ids: string[]): Promise<void> {
    if (ids.length > 0) await this.#db('tus_uploads').whereIn('id', ids).whereNotNull('span_end').update({ span_end: null });
  }

  /**
   * The person's final upload of these parts (`finalKey`); or, written by a process not yet on
   * this version (several share a database during an upgrade), with no key, of this very header.
   */
  async findFinal(profileId: string, concatKey: string, concatHeader?: string): Promise<TusUpload | null> {
    const row = (await this.#db('tus_uploads')
      .where({ profile_id: profileId, concat: 'final' })
      .andWhere((which) => {
        which.where({ concat_key: concatKey });
        if (concatHeader !== undefined) which.orWhere((unkeyed) => unkeyed.whereNull('concat_key').andWhere({ concat_header: concatHeader }));
      })
      .orderBy('created_at')
      .first()) as Row | undefined;
    return row ? toUpload(row) : null;
  }

  /** Lets go of the upload, with its new offset and part count when bytes were kept. */
  async release(id: string, writer: string, moved: { offset: number; parts: number; length?: number | null; expiresAt: number } | null): Promise<boolean> {
    const changed = await this.#db('tus_uploads')
      .where({ id, writer })
      .update({
        writer: null,
        writer_until: null,
        ...(moved ? { upload_offset: moved.offset, parts: moved.parts, expires_at: moved.expiresAt, ...(moved.length !== undefined ? { upload_length: moved.length } : {}) } : {}),
      });
    return changed === 1;
  }

  /** A final upload's offset: its length, its parts being complete. */
  async complete(id: string, length: number): Promise<void> {
    await this.#db('tus_uploads').where({ id }).update({ upload_offset: length });
  }

  /** Sets a deferred length, once. */
  async setLength(id: string, writer: string, length: number): Promise<boolean> {
    const changed = await this.#db('tus_uploads').where({ id, writer }).whereNull('upload_length').update({ upload_length: length });
    return changed === 1;
  }

  /**
   * The upload is its stored file now: its URL, and nobody writes it any more; only by the
   * lease's holder. In the transaction that records the file as the uploader's (`tus.ts`).
   */
  async finish(id: string, writer: string, file: { url: string; size: number }, expiresAt: number): Promise<boolean> {
    const changed = await this.#db('tus_uploads').where({ id, writer }).update({ url: file.url, upload_offset: file.size, writer: null, writer_until: null, expires_at: expiresAt });
    return changed === 1;
  }

  /** The span an upload is in, if any. */
  async spanOf(id: string): Promise<string | null> {
    const row = (await this.#db('tus_uploads').where({ id }).first('span')) as { span: string | null } | undefined;
    return row?.span ?? null;
  }

  async remove(id: string): Promise<void> {
    await this.#db('tus_uploads').where({ id }).delete();
  }

  /** Removes the upload unless a live request writes it (its lease has not run out); false: one does. */
  async removeUnlessWritten(id: string, now: number): Promise<boolean> {
    const removed = await this.#db('tus_uploads')
      .where({ id })
      .where((q) => q.whereNull('writer').orWhere('writer_until', '<', now))
      .delete();
    return removed === 1 || (await this.#db('tus_uploads').where({ id }).first('id')) === undefined;
  }

  /** Unfinished uploads past their expiry that nobody is writing. */
  async expired(now: number): Promise<string[]> {
    const rows = (await this.#db('tus_uploads')
      .whereNull('url')
      .where('expires_at', '<', now)
      .where((q) => q.whereNull('writer').orWhere('writer_until', '<', now))
      .select('id')) as Array<{ id: string }>;
    return rows.map((row) => row.id);
  }

  /** Finished uploads kept for their HEAD, past their expiry. */
  async finishedBefore(now: number): Promise<string[]> {
    const rows = (await this.#db('tus_uploads').whereNotNull('url').where('expires_at', '<', now).select('id')) as Array<{ id: string }>;
    return rows.map((row) => row.id);
  }

  /** Every upload id, for the store's sweep of chunks nobody refers to. */
  async ids(): Promise<string[]> {
    return ((await this.#db('tus_uploads').select('id')) as Array<{ id: string }>).map((row) => row.id);
  }
}
