import type { Knex } from 'knex';

/**
 * SQL for what proves a client and what lets one register: its secrets (hashed; a rotated one
 * lives on until its `expires_at`), the operators' one-use initial access tokens (hashed), and
 * the `jti` of each `private_key_jwt` assertion until it expires, so none is accepted twice.
 */
export class RegistryRepository {
  readonly #db: Knex;

  constructor(db: Knex) {
    this.#db = db;
  }

  // ---- client secrets ------------------------------------------------------------------------------

  async addSecret(clientId: string, secretHash: string, now: number): Promise<void> {
    await this.#db('oidc_client_secrets').insert({ secret_hash: secretHash, client_id: clientId, created_at: now, expires_at: null });
  }

  /** The client's secrets still good at `now`: the current one, and rotated ones within their overlap. */
  async liveSecretHashes(clientId: string, now: number): Promise<string[]> {
    const rows = await this.#db('oidc_client_secrets')
      .where({ client_id: clientId })
      .andWhere((q) => q.whereNull('expires_at').orWhere('expires_at', '>', now))
      .select('secret_hash');
    return rows.map((row: { secret_hash: string }) => row.secret_hash);
  }

  /** A new secret replaces the others, which stay good until `overlapEnds` (then: now, none). */
  async rotateSecret(clientId: string, secretHash: string, now: number, overlapEnds: number): Promise<void> {
    await this.#db.transaction(async (trx) => {
      await trx('oidc_client_secrets').where({ client_id: clientId }).andWhere((q) => q.whereNull('expires_at').orWhere('expires_at', '>', overlapEnds)).update({ expires_at: overlapEnds });
      await trx('oidc_client_secrets').insert({ secret_hash: secretHash, client_id: clientId, created_at: now, expires_at: null });
    });
  }

  async removeSecrets(clientId: string): Promise<void> {
    await this.#db('oidc_client_secrets').where({ client_id: clientId }).delete();
  }

  // ---- initial access tokens (RFC 7591 §3) ----------------------------------------------------------

  async addRegistrationToken(tokenHash: string, approved: boolean, now: number, expiresAt: number): Promise<void> {
    await this.#db('oidc_registration_tokens').insert({ token_hash: tokenHash, approved, created_at: now, expires_at: expiresAt, used_at: null });
  }

  /** Whether an initial access token is live (known, unused, unexpired), without using it up. */
  async registrationTokenLive(tokenHash: string, now: number): Promise<boolean> {
    return (await this.#db('oidc_registration_tokens').where({ token_hash: tokenHash }).whereNull('used_at').where('expires_at', '>', now).first('token_hash')) !== undefined;
  }

  /**
   * Uses an initial access token up, in one conditional statement (two registrations with the
   * same token: one wins). Answers whether the clients it registers are approved at once, or
   * null when the token is unknown, used or expired.
   */
  async useRegistrationToken(tokenHash: string, now: number): Promise<{ approved: boolean } | null> {
    const row = await this.#db('oidc_registration_tokens').where({ token_hash: tokenHash }).whereNull('used_at').where('expires_at', '>', now).first('approved');
    if (!row) return null;
    const used = await this.#db('oidc_registration_tokens').where({ token_hash: tokenHash }).whereNull('used_at').update({ used_at: now });
    return used === 1 ? { approved: Boolean(row.approved) } : null;
  }

  // ---- private_key_jwt assertions ------------------------------------------------------------------

  /** Records an assertion's `jti`: false when that client used it before (a replay). */
  async recordAssertion(clientId: string, jti: string, expiresAt: number): Promise<boolean> {
    const result: unknown = await this.#db('oidc_assertions').insert({ client_id: clientId, jti, expires_at: expiresAt }).onConflict(['client_id', 'jti']).ignore().returning('jti');
    return Array.isArray(result) && result.length === 1;
  }

  /** Forgets what has expired: assertions (their `exp` passed, so they are refused anyway) and initial access tokens. */
  async sweep(now: number): Promise<void> {
    await this.#db('oidc_assertions').where('expires_at', '<', now).delete();
    await this.#db('oidc_registration_tokens').where('expires_at', '<', now).delete();
  }
}
