import type { WriteWatch } from '../../db/knex.ts';

/**
 * How long a reading is kept where another process's change may be seen that late (SQLite; see
 * `keptMsFor`): it is seen within it.
 */
export const KEPT_MS = 1000;

/**
 * How long the provider's readings that decide whether something is still live (a session, a
 * token's UserInfo answer, a consent, a person's standing, a client's record) are kept. On
 * PostgreSQL, where any number of processes on several machines share the database, none is
 * kept: a revocation, logout or rejection answered by one process holds at once on every other
 * (RFC 7009 §2.2 allows a propagation delay, and asks to keep it short). On SQLite, one machine's
 * processes on one file, a second: this process's own writes drop them at once (`WriteWatch`),
 * another process's (a second server on the file, the admin command) are seen within it.
 */
export function keptMsFor(config: { databaseUrl: string | undefined }): number {
  return config.databaseUrl === undefined ? KEPT_MS : 0;
}
/** Past this many keys, the kept readings start over. */
const MAX_KEPT = 10_000;

/**
 * Readings of the database kept per process for at most a second (`keptMsFor`: none on
 * PostgreSQL) from the moment the reading
 * began (and never past the `until` a reading gives itself). A change made by this process is
 * seen at once: any write this process sends to the tables the readings come from drops them
 * all (`WriteWatch`), and a reading made while such a write's transaction was open is not kept.
 * A change made by another process (the admin command, another server) is seen within the
 * second. A reading that throws is not kept.
 */
export class KeptReadings<V> {
  readonly #writes: WriteWatch;
  readonly #now: () => number;
  readonly #keptMs: number;
  readonly #kept = new Map<string, { value: V; until: number; generation: number }>();

  /** `keptMs`: how long a reading is kept (`keptMsFor`); 0 reads every time. */
  constructor(writes: WriteWatch, now: () => number, keptMs: number) {
    this.#writes = writes;
    this.#now = now;
    this.#keptMs = keptMs;
  }

  async get(key: string, read: () => Promise<{ value: V; until?: number }>): Promise<V> {
    if (this.#keptMs === 0) return (await read()).value;
    const now = this.#now();
    const generation = this.#writes.generation();
    const kept = this.#kept.get(key);
    if (kept && now < kept.until && kept.generation === generation) return kept.value;
    const { value, until } = await read();
    if (this.#writes.settled() && this.#writes.generation() === generation) {
      if (this.#kept.size >= MAX_KEPT) this.#kept.clear();
      this.#kept.set(key, { value, until: Math.min(now + this.#keptMs, until ?? Infinity), generation });
    } else {
      this.#kept.delete(key);
    }
    return value;
  }
}
