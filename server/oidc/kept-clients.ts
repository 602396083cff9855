import type { ClientRecord, OidcRepository } from './repository.ts';
/** Past this many ids (most of them unknown ones a caller made up), the cache starts over. */
const MAX_ENTRIES = 1000;

/**
 * The client records as the endpoints read them (authorize, the pages, token), kept per process:
 * each is read from the database at most once a second (on PostgreSQL, every time:
 * `keptMsFor`), rather than on every request. A change
 * made by this process (`forget`, called by add, approve, reject and remove) is seen at once; one
 * made by another process (the admin command, another server) within that second. An unknown id
 * is remembered as unknown for the same second. The same idea as `KeptReadings` (kept-readings.ts), told
 * of this process's changes by `forget` rather than by a `WriteWatch`.
 */
export class KeptClients {
  readonly #repo: OidcRepository;
  readonly #now: () => number;
  readonly #keptMs: number;
  readonly #entries = new Map<string, { client: ClientRecord | null; until: number }>();
  /** Moved on by `forget`, so a reading begun before a change here is not kept. */
  #generation = 0;

  /** `keptMs`: how long a reading is kept (`keptMsFor`); 0 reads every time. */
  constructor(repo: OidcRepository, now: () => number, keptMs: number) {
    this.#repo = repo;
    this.#now = now;
    this.#keptMs = keptMs;
  }

  async find(id: string): Promise<ClientRecord | null> {
    if (this.#keptMs === 0) return this.#repo.findClient(id);
    const now = this.#now();
    const entry = this.#entries.get(id);
    if (entry && now < entry.until) return entry.client;
    const generation = this.#generation;
    const client = await this.#repo.findClient(id);
    if (generation === this.#generation) {
      if (this.#entries.size >= MAX_ENTRIES) this.#entries.clear();
      this.#entries.set(id, { client, until: now + this.#keptMs });
    }
    return client;
  }

  /** A client was added, changed or removed here: read it again next time. */
  forget(id: string): void {
    this.#generation += 1;
    this.#entries.delete(id);
  }
}
