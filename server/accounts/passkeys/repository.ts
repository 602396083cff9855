import type { Knex } from 'knex';

export interface PasskeyRecord {
  credentialId: string;
  profileId: string;
  /** The COSE public key, base64url. */
  publicKey: string;
  counter: number;
  transports: string[];
  backedUp: boolean;
  deviceType: 'singleDevice' | 'multiDevice';
  name: string;
  createdAt: number;
  lastUsedAt: number | null;
}

interface PasskeyRow {
  credential_id: string;
  profile_id: string;
  public_key: string;
  counter: number | string;
  transports: string;
  backed_up: boolean | number;
  device_type: string;
  name: string;
  created_at: number | string;
  last_used_at: number | string | null;
}

function toPasskey(row: PasskeyRow): PasskeyRecord {
  const transports: unknown = JSON.parse(row.transports);
  return {
    credentialId: row.credential_id,
    profileId: row.profile_id,
    publicKey: row.public_key,
    counter: Number(row.counter),
    transports: Array.isArray(transports) ? transports.filter((t): t is string => typeof t === 'string') : [],
    backedUp: Boolean(row.backed_up),
    deviceType: row.device_type === 'multiDevice' ? 'multiDevice' : 'singleDevice',
    name: row.name,
    createdAt: Number(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
  };
}

/** What a ceremony's challenge is for. */
export type ChallengeKind = 'registration' | 'authentication';

export interface ChallengeRecord {
  kind: ChallengeKind;
  challenge: string;
  profileId: string | null;
  expiresAt: number;
}

/** SQL for `passkeys`, `passkey_user_handles` and `passkey_challenges`. Given its Knex (or a transaction). */
export class PasskeysRepository {
  readonly #db: Knex;

  constructor(db: Knex) {
    this.#db = db;
  }

  async listOf(profileId: string): Promise<PasskeyRecord[]> {
    const rows = (await this.#db('passkeys').where({ profile_id: profileId }).orderBy('created_at', 'asc').orderBy('credential_id', 'asc')) as PasskeyRow[];
    return rows.map(toPasskey);
  }

  async countOf(profileId: string): Promise<number> {
    const row = (await this.#db('passkeys').where({ profile_id: profileId }).count({ n: '*' }).first()) as { n: number | string } | undefined;
    return Number(row?.n ?? 0);
  }

  async find(credentialId: string): Promise<PasskeyRecord | null> {
    const row = (await this.#db('passkeys').where({ credential_id: credentialId }).first()) as PasskeyRow | undefined;
    return row ? toPasskey(row) : null;
  }

  /**
   * False when the credential id is already stored (for anyone): a credential is registered once.
   * An insert that ignores a conflict, then a read of what is stored: Knex answers an ignored
   * insert differently on SQLite and PostgreSQL, and the row itself says who won.
   */
  async insert(passkey: PasskeyRecord): Promise<boolean> {
    await this.#db('passkeys')
      .insert({
        credential_id: passkey.credentialId,
        profile_id: passkey.profileId,
        public_key: passkey.publicKey,
        counter: passkey.counter,
        transports: JSON.stringify(passkey.transports),
        backed_up: passkey.backedUp,
        device_type: passkey.deviceType,
        name: passkey.name,
        created_at: passkey.createdAt,
        last_used_at: passkey.lastUsedAt,
      })
      .onConflict('credential_id')
      .ignore();
    const stored = await this.find(passkey.credentialId);
    return stored !== null && stored.profileId === passkey.profileId && stored.createdAt === passkey.createdAt && stored.name === passkey.name;
  }

  async remove(profileId: string, credentialId: string): Promise<boolean> {
    return (await this.#db('passkeys').where({ profile_id: profileId, credential_id: credentialId }).delete()) === 1;
  }

  /** The person's passkeys registered at or after `since` (those `removeAddedSince` removes). */
  async addedSince(profileId: string, since: number): Promise<PasskeyRecord[]> {
    return (await this.listOf(profileId)).filter((passkey) => passkey.createdAt >= since);
  }

  /** The person's passkeys registered at or after `since` removed; how many. */
  async removeAddedSince(profileId: string, since: number): Promise<number> {
    return this.#db('passkeys').where({ profile_id: profileId }).andWhere('created_at', '>=', since).delete();
  }

  /**
   * Records a use: the new counter and when, only if the stored counter is still the one the
   * check was made against (`previous`), so of two assertions racing with the same counter one
   * wins. False when it lost.
   */
  async recordUse(credentialId: string, previous: number, next: { counter: number; backedUp: boolean; at: number }): Promise<boolean> {
    const changed = await this.#db('passkeys')
      .where({ credential_id: credentialId, counter: previous })
      .update({ counter: next.counter, backed_up: next.backedUp, last_used_at: next.at });
    return changed === 1;
  }

  // ---- user handles --------------------------------------------------------------------------------

  async userHandleOf(profileId: string): Promise<string | null> {
    const row = (await this.#db('passkey_user_handles').where({ profile_id: profileId }).first('user_handle')) as { user_handle: string } | undefined;
    return row?.user_handle ?? null;
  }

  /** The person's handle: the stored one, or `fresh` stored now (the first of two racing wins). */
  async ensureUserHandle(profileId: string, fresh: string): Promise<string> {
    await this.#db('passkey_user_handles').insert({ profile_id: profileId, user_handle: fresh }).onConflict('profile_id').ignore();
    const stored = await this.userHandleOf(profileId);
    if (stored === null) throw new Error('the passkey user handle was not stored');
    return stored;
  }

  // ---- challenges ---------------------------------------------------------------------------------

  /** Stores a ceremony's challenge under its key, replacing an older one under the same key. */
  async putChallenge(key: string, challenge: ChallengeRecord): Promise<void> {
    await this.#db('passkey_challenges')
      .insert({ key, kind: challenge.kind, challenge: challenge.challenge, profile_id: challenge.profileId, expires_at: challenge.expiresAt })
      .onConflict('key')
      .merge();
  }

  /**
   * Takes the challenge stored under a key: it is deleted as it is read, by a statement that must
   * delete exactly the row read, so of two requests presenting it, one gets it. Null when there
   * is none (never made, used, or taken by the other request).
   */
  async takeChallenge(key: string): Promise<ChallengeRecord | null> {
    const row = (await this.#db('passkey_challenges').where({ key }).first()) as
      | { kind: string; challenge: string; profile_id: string | null; expires_at: number | string }
      | undefined;
    if (!row) return null;
    const deleted = await this.#db('passkey_challenges').where({ key, challenge: row.challenge }).delete();
    if (deleted !== 1) return null;
    return {
      kind: row.kind === 'registration' ? 'registration' : 'authentication',
      challenge: row.challenge,
      profileId: row.profile_id,
      expiresAt: Number(row.expires_at),
    };
  }

  /** Deletes expired challenges (the sweeper). */
  async sweep(now: number): Promise<void> {
    await this.#db('passkey_challenges').where('expires_at', '<=', now).delete();
  }
}
