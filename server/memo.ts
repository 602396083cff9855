/**
 * Answers worked out once and kept, by key, up to `most` of them; past that all are let go and
 * worked out again as asked (a flood of new keys costs the work, never the memory). For answers
 * that depend on the key alone and are cheap to make again.
 */
export class Memo<K, V> {
  readonly #kept = new Map<K, V>();
  readonly #most: number;

  constructor(most: number) {
    this.#most = most;
  }

  /** The answer kept for `key`, or `make()`'s, kept from now on. */
  get(key: K, make: () => V): V {
    if (this.#kept.has(key)) return this.#kept.get(key) as V;
    const made = make();
    if (this.#kept.size >= this.#most) this.#kept.clear();
    this.#kept.set(key, made);
    return made;
  }
}
