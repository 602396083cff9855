/**
 * Writes that need doing only once in a while for the same key, remembered per process: when a
 * client last got a person's tokens (the Applications section shows it to the minute), and which
 * clients a browser session signed in to (recorded once in ten minutes; the row stays until the
 * session or the client's grant ends, and the process that finds it ended forgets the key, so a
 * new sign-in records it again; another process's memory of it lasts its ten minutes at most).
 * Skipping the repeats keeps a statement off every sign-in and every refresh. Another process
 * writes its own first time; the writes are idempotent.
 */
export class OnceInAWhile {
  readonly #intervalMs: number;
  readonly #seen = new Map<string, number>();

  constructor(intervalMs: number) {
    this.#intervalMs = intervalMs;
  }

  /** Whether the write for `key` is due now (and, if it is, it counts as done from now). */
  due(key: string, now: number): boolean {
    const last = this.#seen.get(key);
    if (last !== undefined && now - last < this.#intervalMs) return false;
    // Past this many keys (a busy install's people and clients), it starts over: a write too many, never one too few.
    if (this.#seen.size >= 10_000) this.#seen.clear();
    this.#seen.set(key, now);
    return true;
  }

  /** A write that failed is due again. */
  forget(key: string): void {
    this.#seen.delete(key);
  }
}
