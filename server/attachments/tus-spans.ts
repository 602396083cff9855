/**
 * Where the partial uploads of a parallel tus upload put their bytes on the local disk, so that
 * their final upload is kept without a copy (issue 29).
 *
 * A client sending a file in parallel parts (tus-js-client's `parallelUploads`) creates the
 * parts in the file's order, all with the same `Upload-Metadata`, then names them in that order
 * in its final upload. Their positions in the file are not known until then, so they are
 * guessed: a person's partial uploads of one field with the same metadata, created within
 * `SPAN_WINDOW_MS` of the first, make a span, each placed after the one created before it, and
 * all writing into one data file (hard links to the first one's, `FileStore.shareData`). A final
 * upload that names exactly a span's parts in that order is then that file, linked to its
 * content address; anything else (parts created out of order, by two processes at once, a part
 * left out) is copied, as before. The guess decides only whether a copy is made: the assembly
 * checks the chunks' places and the file's links itself. On the local disk the span's first
 * part is taken as the file's start and hashed as it arrives, so the assembly hashes only the
 * others (and, when the parts are the file, reads only them).
 *
 * On S3 a span is one multipart upload (`tus_spans`), and a part sent whole in one request is
 * sent as its part (numbered by its place in the span) rather than as a chunk object. A final
 * upload first settles the spans its parts are kept in: no part is added after, and the
 * multipart upload is completed with every part kept, into the span's object. When that object
 * is exactly the final upload's parts, in order, it is the file: read once for the SHA-1, never
 * sent again. Otherwise each part kept there is read from its range of it, and copied as before.
 * The SHA-1 is always of the object's bytes as read (no hash from the parts' arrival is taken
 * for them), so whatever a part holds, the file is stored under its own content address.
 */
import { removeQuietly } from './store/disk.ts';
import type { AssemblyPiece, FileStore, Received } from './store/file-store.ts';
import type { NewTusUpload, TusRepository, TusSpan, TusUpload } from './tus-repository.ts';
import { KeyedLine, type Turn } from './keyed-line.ts';

/** How long after a span's first part a part with the same metadata joins it. */
const SPAN_WINDOW_MS = 60_000;
/** Tries at taking a span's end, which another process may move meanwhile. */
const TRIES = 3;
/** S3's smallest part but for the last: a span's multipart upload takes no smaller one, so that any of its parts complete it. */
const S3_PART_MIN = 5 * 1024 * 1024;
/** S3's highest part number. */
const S3_PARTS_MAX = 10_000;

export class TusSpans {
  readonly #repo: TusRepository;
  readonly #store: FileStore;
  readonly #now: () => number;
  /** The last place in line for partial uploads' creations in this process, by credential and `Upload-Metadata`. */
  readonly #placing = new KeyedLine();

  constructor(repo: TusRepository, store: FileStore, now: () => number) {
    this.#repo = repo;
    this.#store = store;
    this.#now = now;
  }

  /**
   * A place in line for a partial upload's creation, taken at once (before anything is awaited:
   * who is asking, the checks), so that the parts of one file are placed in the order their
   * creations reached this process, which is a client's order when it sends them one after
   * another, as tus-js-client does. `run` does the creation in its turn; every place is run or
   * let go (`leave`). `key`: the request's credential and its `Upload-Metadata` (the field and
   * the file name), as sent. (Creations taken by two processes are placed in whatever order their
   * writes meet: copied then, if not in the file's.)
   */
  line(key: string): Turn {
    return this.#placing.take(key);
  }

  /**
   * Records a new partial upload (in its turn, `line`), placed in a span when its length is
   * known (otherwise as any upload), and on the local disk writing into the span's data file.
   * The first of a span is hashed as it arrives (`TusService`), whatever the store.
   */
  async create(upload: NewTusUpload): Promise<void> {
    const { length } = upload;
    if (length === null) return this.#repo.create(upload);
    const span = await this.#place(upload, length);
    // Best effort: a part whose file cannot be shared writes the same positions into a file of its own.
    await this.#store.shareData?.(upload.id, span).catch(() => false);
  }

  /** Records the upload after the person's open span of its field and metadata (taking its end), or as the first of a new one; answers the span. */
  async #place(upload: NewTusUpload, length: number): Promise<string> {
    const fields = { invitation: upload.invitation, field: upload.field, metadata: upload.metadata };
    for (let tries = 0; tries < TRIES; tries += 1) {
      const open = await this.#repo.openSpan(upload.profileId, fields, this.#now() - SPAN_WINDOW_MS);
      if (!open) break;
      if (await this.#repo.extendSpan(open.id, open.end, open.parts, length)) {
        await this.#repo.create(upload, { id: open.id, at: open.end, end: null, part: open.parts + 1 });
        return open.id;
      }
    }
    // On S3 the span's multipart upload is begun before anyone can join the span, so that no part
    // finds the span without it. Best effort: without it, the parts are chunk objects, copied at the end.
    if (length >= S3_PART_MIN) await this.#opened(upload.id);
    await this.#repo.create(upload, { id: upload.id, at: 0, end: length, part: 1 });
    return upload.id;
  }

  /**
   * A span's multipart upload begun in the store (S3) and recorded; null when the store has none
   * or either step failed (what was begun is then let go, and the parts are chunk objects). Only a
   * span's first upload, or an upload's own request holding its lease, begins one: a second one
   * for the same span is refused by the record's key, and let go.
   */
  async #opened(id: string): Promise<string | null> {
    const uploadId = await this.#store.openSpan?.(id).catch(() => null);
    if (!uploadId) return null;
    try {
      await this.#repo.createSpan(id, uploadId, this.#now());
      return uploadId;
    } catch {
      await this.#store.dropSpan?.({ id, uploadId }).catch(() => undefined);
      return null;
    }
  }

  /**
   * On S3, a part received whole in its first request, sent as its place's part of its span's
   * multipart upload and counted there (the received file is then removed). False when it is not
   * (the store has no spans, the part is under S3's smallest, its span is settled): the caller
   * keeps it as a chunk.
   */
  async keep(upload: TusUpload, received: Received): Promise<boolean> {
    const { span, spanPart: part } = upload;
    if (!this.#store.putSpanPart || !span || part === null || part > S3_PARTS_MAX) return false;
    if (upload.parts !== 0 || received.size !== upload.length || received.size < S3_PART_MIN) return false;
    const found = await this.#repo.findSpan(span);
    return found ? this.#send(found, part, received) : false;
  }

  /**
   * On S3, a request's bytes of an ordinary upload sent in several (tus-js-client's `chunkSize`,
   * Uppy's chunks), sent as part `index` of the upload's own multipart upload, begun with the
   * first such part, rather than as a chunk object: each at least S3's smallest part, or the
   * upload's last bytes. False otherwise: the caller keeps it as a chunk. Its assembly is then
   * that multipart upload completed, read once for the SHA-1 (`ownPieces`).
   */
  async keepOwn(upload: TusUpload, received: Received, index: number): Promise<boolean> {
    if (!this.#store.openSpan || upload.length === null || index > S3_PARTS_MAX) return false;
    if (received.size < S3_PART_MIN && upload.offset + received.size !== upload.length) return false;
    let span = await this.#repo.findSpan(upload.id);
    if (!span) {
      // Begun only with the first part: with it kept apart, the parts could not be the file.
      if (index !== 1) return false;
      const uploadId = await this.#opened(upload.id);
      if (!uploadId) return false;
      span = await this.#repo.findSpan(upload.id);
      if (!span) return false;
    }
    return this.#send(span, index, received);
  }

  /**
   * Sends a received file as a part of the span's multipart upload and counts it there. A part
   * counted already, by a request that stopped before it moved the offset on, stays when it is as
   * long (its bytes are the file's there; the SHA-1 is taken from what the store holds); one of
   * another length is no longer counted, and this one is sent in its place.
   */
  async #send(span: TusSpan, part: number, received: Received): Promise<boolean> {
    const before = span.kept.find((kept) => kept.part === part);
    if (before?.size === received.size) {
      await removeQuietly(received.path);
      return true;
    }
    if (span.settled || !this.#store.putSpanPart) return false;
    if (before && !(await this.#repo.dropSpanPart(span.id, before))) return false;
    const etag = await this.#store.putSpanPart(received, span, part).catch(() => null);
    if (etag === null || !(await this.#repo.keepSpanPart(span.id, { part, etag, size: received.size }))) return false;
    await removeQuietly(received.path);
    return true;
  }

  /**
   * What a final upload is assembled from, in its parts' order: each part's chunks or, for a part
   * kept in its span's multipart upload, its range of the object the span became (settled here,
   * only when a part named is kept in it: whether it is was decided before the part was complete).
   */
  async pieces(partials: TusUpload[]): Promise<AssemblyPiece[]> {
    const settled = new Map<string, TusSpan | null>();
    const pieces: AssemblyPiece[] = [];
    for (const part of partials) {
      const span = part.span !== null && part.spanPart !== null ? await this.#settled(part.span, part.spanPart, settled) : null;
      const range = span && part.spanPart !== null ? rangeOf(span, part.spanPart) : null;
      if (span && range) pieces.push({ span: span.id, range });
      else pieces.push(...Array.from({ length: part.parts }, (_, i) => ({ uploadId: part.id, index: i + 1 })));
    }
    return pieces;
  }

  /** What an ordinary upload is assembled from: its chunks, and the ranges of its own multipart upload's object for the parts sent there (settled here). */
  async ownPieces(upload: TusUpload): Promise<AssemblyPiece[]> {
    const span = await this.#settled(upload.id, null, new Map());
    return Array.from({ length: upload.parts }, (_, i) => {
      const range = span ? rangeOf(span, i + 1) : null;
      return span && range ? { span: span.id, range } : i + 1;
    });
  }

  /**
   * The span, settled and its multipart upload completed (once, whoever asks first), when it
   * keeps that part (or, `part` null, any); null otherwise.
   */
  async #settled(id: string, part: number | null, seen: Map<string, TusSpan | null>): Promise<TusSpan | null> {
    if (!this.#store.settleSpan) return null;
    if (seen.has(id)) return seen.get(id) ?? null;
    let span = await this.#repo.findSpan(id);
    if (!span?.kept.some((p) => part === null || p.part === part)) return null;
    if (!span.settled) {
      await this.#repo.settleSpan(id);
      span = await this.#repo.findSpan(id);
      if (!span) return null;
    }
    await this.#store.settleSpan(span, span.kept);
    seen.set(id, span);
    return span;
  }

  /** An ordinary upload's file is kept: its own multipart upload's object goes. */
  async kept(id: string): Promise<void> {
    const span = this.#store.dropSpan ? await this.#repo.findSpan(id) : null;
    if (!span) return;
    await this.#store.dropSpan?.(span);
    await this.#repo.removeSpan(id);
  }

  /** After an upload of the span is forgotten: once none is left, what the span left in the store goes. */
  async forgotten(id: string): Promise<void> {
    if (await this.#repo.spanInUse(id)) return;
    const span = await this.#repo.findSpan(id);
    if (!span) return;
    await this.#store.dropSpan?.(span);
    await this.#repo.removeSpan(id);
  }

  /** Spans left with no upload (a process stopped between an upload's end and its span's). */
  async sweep(): Promise<void> {
    for (const id of await this.#repo.orphanSpans(this.#now() - SPAN_WINDOW_MS)) await this.forgotten(id).catch(() => undefined);
  }

  /** The spans of these parts take no more: their final upload is being made. */
  close(parts: TusUpload[]): Promise<void> {
    return this.#repo.closeSpans(parts.map((part) => part.id));
  }
}

/** Where a part kept in a settled span lies in the object it became: after every part of a lower number. */
function rangeOf(span: TusSpan, part: number): { start: number; end: number } | null {
  const kept = span.kept.find((p) => p.part === part);
  if (!kept) return null;
  const start = span.kept.reduce((sum, p) => sum + (p.part < part ? p.size : 0), 0);
  return { start, end: start + kept.size - 1 };
}
