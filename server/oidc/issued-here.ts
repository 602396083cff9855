import type { RefreshRecord } from './refresh-repository.ts';

/** Past this many, the oldest is let go (its rotation then reads it, as any process would). */
const MAX_ISSUED = 1_000;

/**
 * The refresh tokens this process issued and has not seen presented since, by hash (what the
 * database holds too: never the token itself), as they were stored. A rotation of one of them
 * starts from this record instead of reading it back first, so its ID token is signed while its
 * statements run: the lookup was a round trip to the database before anything else could start.
 *
 * What a record here does not say is whether the token is still live: another process (or this
 * one) may have rotated it, revoked it, or revoked its family since. The rotation's own statement
 * (`RefreshRepository.rotate`) checks all three, so a token refused by the lookup is refused by
 * it too, and its family revoked the same way. Everything else about a token (its client, person,
 * scopes, `tokenVersion`, lifetimes) never changes once stored. A record is taken out when its
 * token is presented by its client, whatever the outcome; a token presented to another process,
 * or after this one restarted, is read from the database as before.
 */
export class IssuedHere {
  readonly #records = new Map<string, RefreshRecord>();

  /** A token just stored (its insert or rotation committed), before its holder has it. */
  remember(record: RefreshRecord): void {
    if (this.#records.size >= MAX_ISSUED) this.#records.delete(this.#records.keys().next().value as string);
    this.#records.set(record.tokenHash, record);
  }

  /** The record of a token presented by `clientId`, taken out; nothing for another client's token (refused from the database's copy). */
  take(tokenHash: string, clientId: string): RefreshRecord | undefined {
    const record = this.#records.get(tokenHash);
    if (record?.clientId !== clientId) return undefined;
    this.#records.delete(tokenHash);
    return record;
  }
}
