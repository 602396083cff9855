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
 * checks the chunks' places and the file's links itself. On any store, the span's first part
 * is taken as the file's start and hashed as it arrives, so the assembly hashes only the others
 * (and, when the parts are the file, reads only them).
 */
import type { FileStore } from './store/file-store.ts';
import type { NewTusUpload, TusRepository, TusUpload } from './tus-repository.ts';

/** How long after a span's first part a part with the same metadata joins it. */
const SPAN_WINDOW_MS = 60_000;
/** Tries at taking a span's end, which another process may move meanwhile. */
const TRIES = 3;

/** A place in line (`TusSpans.line`). */
export interface SpanTurn {
  run<T>(work: () => Promise<T>): Promise<T>;
  leave(): void;
}

export class TusSpans {
  readonly #repo: TusRepository;
  readonly #store: FileStore;
  readonly #now: () => number;
  /** The last place in line for partial uploads' creations in this process, by credential and `Upload-Metadata`. */
  readonly #placing = new Map<string, Promise<void>>();

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
  line(key: string): SpanTurn {
    const before = this.#placing.get(key) ?? Promise.resolve();
    let leave!: () => void;
    const mine = new Promise<void>((resolve) => (leave = resolve));
    const after = before.then(() => mine);
    this.#placing.set(key, after);
    void after.then(() => {
      if (this.#placing.get(key) === after) this.#placing.delete(key);
    });
    return {
      async run<T>(work: () => Promise<T>): Promise<T> {
        await before;
        try {
          return await work();
        } finally {
          leave();
        }
      },
      leave,
    };
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
      if (await this.#repo.extendSpan(open.id, open.end, length)) {
        await this.#repo.create(upload, { id: open.id, at: open.end, end: null });
        return open.id;
      }
    }
    await this.#repo.create(upload, { id: upload.id, at: 0, end: length });
    return upload.id;
  }

  /** The spans of these parts take no more: their final upload is being made. */
  close(parts: TusUpload[]): Promise<void> {
    return this.#repo.closeSpans(parts.map((part) => part.id));
  }
}
