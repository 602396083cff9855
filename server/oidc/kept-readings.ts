import type { WriteWatch } from '../../db/knex.ts';

/** How long a reading is kept: another process's change is seen within it. */
export const KEPT_MS = 1000;
/** Past this many keys, the kept readings start over. */
const MAX_KEPT = 10_000;

/**
 * Readings of the database kept per process for at most a second from the moment the reading
 * began (and never past the `until` a reading gives itself). A change made by this process is
 * seen at once: any write this process sends to the tables the readings come from drops them
 * all (`WriteWatch`), and a reading made while such a write's transaction was open is not kept.
 * A change made by another process (the admin command, another server) is seen within the
 * second. A reading that throws is not kept.
 */
export class KeptReadings<V> {
  readonly #writes: WriteWatch;
  readonly #now: () => number;
  readonly #kept = new Map<string, { value: V; until: number; generation: number }>();

  constructor(writes: WriteWatch, now: () => number) {
    this.#writes = writes;
    this.#now = now;
  }

  async get(key: string, read: () => Promise<{ value: V; until?: number }>): Promise<V> {
    const now = this.#now();
    const generation = this.#writes.generation();
    const kept = this.#kept.get(key);
    if (kept && now < kept.until && kept.generation === generation) return kept.value;
    const { value, until } = await read();
    if (this.#writes.settled() && this.#writes.generation() === generation) {
      if (this.#kept.size >= MAX_KEPT) this.#kept.clear();
      this.#kept.set(key, { value, until: Math.min(now + KEPT_MS, until ?? Infinity), generation });
    } else {
      this.#kept.delete(key);
    }
    return value;
  }
}
