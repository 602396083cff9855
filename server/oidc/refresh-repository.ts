import type { Knex } from 'knex';
import { fromJson as json, numberOrNull } from '../../db/json.ts';
import type { OidcScope } from '../../shared/index.ts';

/** A refresh token, stored by its hash. Every token rotated from the same code is one family. */
export interface RefreshRecord {
  tokenHash: string;
  familyId: string;
  clientId: string;
  profileId: string;
  scopes: OidcScope[];
  /** The person's `tokenVersion` when the family began: a reset, logout-all, block or merge ends it. */
  tokenVersion: number;
  authTime: number;
  sid: string | null;
  createdAt: number;
  /** The family's end (its absolute lifetime), which no rotation moves. */
  familyExpiresAt: number;
  /** This token's own end (the idle lifetime), which each rotation moves on. */
  expiresAt: number;
  /** When it was rotated: used again after that, it revokes its family. */
  usedAt: number | null;
  revokedAt: number | null;
  /**
   * Whether any token of its family is revoked, read with it (`find`): a family revoked while
   * one of its successors was being stored (on PostgreSQL the revoking statement may not see
   * it) still ends at that successor's first use.
   */
  familyRevoked?: boolean;
}

const toRecord = (row: Record<string, unknown>): RefreshRecord => ({
  tokenHash: String(row.token_hash),
  familyId: String(row.family_id),
  clientId: String(row.client_id),
  profileId: String(row.profile_id),
  scopes: json<OidcScope[]>(row.scopes),
  tokenVersion: Number(row.token_version),
  authTime: Number(row.auth_time),
  sid: (row.sid ?? null) as string | null,
  createdAt: Number(row.created_at),
  familyExpiresAt: Number(row.family_expires_at),
  expiresAt: Number(row.expires_at),
  usedAt: numberOrNull(row.used_at),
  revokedAt: numberOrNull(row.revoked_at),
});

const toRow = (record: RefreshRecord) => ({
  token_hash: record.tokenHash,
  family_id: record.familyId,
  client_id: record.clientId,
  profile_id: record.profileId,
  scopes: JSON.stringify(record.scopes),
  token_version: record.tokenVersion,
  auth_time: record.authTime,
  sid: record.sid,
  created_at: record.createdAt,
  family_expires_at: record.familyExpiresAt,
  expires_at: record.expiresAt,
  used_at: record.usedAt,
  revoked_at: record.revokedAt,
});

/** The access token a rotation gives, stored with its successor (by its hash, as every token). */
export interface AccessTokenOfRotation {
  tokenHash: string;
  scopes: OidcScope[];
  expiresAt: number;
}

/**
 * Whether a token of the family of the row `familyOf` names (`t.family_id`) is revoked: one seek
 * of the partial index of revoked tokens (`oidc_refresh_tokens_revoked_family`). Every revocation
 * revokes whole families, so one revoked token means the family has ended.
 */
const familyRevoked = (familyOf: string) => `exists (select 1 from "oidc_refresh_tokens" as "f" where "f"."family_id" = ${familyOf} and "f"."revoked_at" is not null)`;

/** SQL for refresh tokens (RFC 9700 §4.14.2: rotated on every use, a reuse revokes the family). */
export class RefreshRepository {
  readonly #db: Knex;

  constructor(db: Knex) {
    this.#db = db;
  }

  async insert(record: RefreshRecord): Promise<void> {
    await this.#db('oidc_refresh_tokens').insert(toRow(record));
  }

  /** A token by its hash, with whether its family is revoked (one statement). */
  async find(tokenHash: string): Promise<RefreshRecord | null> {
    const row = await this.#db('oidc_refresh_tokens as t')
      .where('t.token_hash', tokenHash)
      .first('t.*', this.#db.raw(`${familyRevoked('t.family_id')} as family_revoked`));
    if (!row) return null;
    return { ...toRecord(row), familyRevoked: row.family_revoked === true || Number(row.family_revoked) === 1 };
  }

  /**
   * Rotates a token in one statement: stores its successor with the access token given with it
   * (inserted into `oidc_tokens` by the trigger `oidc_refresh_access_token`, from the successor's
   * row: its grant is the successor) and marks the used token, only if it is still live. An
   * upsert of two rows: the successor is new, and the used token's own row meets itself (its
   * key) and is updated only while neither used nor revoked, nor any token of its family
   * revoked. True when both rows came back (the mark held); false when the token was rotated or
   * revoked meanwhile (two uses at once: one wins, the other is a reuse) or its family was, and
   * the successor and its access token, stored anyway, go with the family's revocation. One
   * statement, so no process can stop between the three. It checks everything about the token
   * that can change, so a rotation may start from a record it did not read (`IssuedHere`).
   *
   * The used token's row is given in full because an upsert's row must be one that could be
   * inserted. It is inserted only when the token was deleted since it was read (the sweep, at the
   * token's very expiry, perhaps with its family's revoked rows): it then goes in revoked, and the
   * rotation is refused, so a deleted token is never brought back live and a use after it is
   * still a reuse.
   */
  async rotate(successor: RefreshRecord, access: AccessTokenOfRotation, used: RefreshRecord, now: number): Promise<boolean> {
    const rows: Array<{ token_hash: string; revoked_at: unknown }> = await this.#db('oidc_refresh_tokens')
      .insert([
        { ...toRow(successor), access_token_hash: access.tokenHash, access_scopes: JSON.stringify(access.scopes), access_expires_at: access.expiresAt },
        { ...toRow({ ...used, usedAt: now, revokedAt: now }), access_token_hash: null, access_scopes: null, access_expires_at: null },
      ])
      .onConflict('token_hash')
      .merge(['used_at'])
      .where('oidc_refresh_tokens.used_at', null)
      .whereNull('oidc_refresh_tokens.revoked_at')
      .whereRaw(`not ${familyRevoked('oidc_refresh_tokens.family_id')}`)
      .returning(['token_hash', 'revoked_at']);
    const mark = rows.find((row) => row.token_hash === used.tokenHash);
    return rows.length === 2 && mark !== undefined && mark.revoked_at === null;
  }

  /** Revokes a family: its refresh tokens, and the access tokens issued with them. */
  async revokeFamily(familyId: string, now: number): Promise<void> {
    await this.#revokeFamilies(familyId, now);
  }

  /**
   * Revokes every live refresh and access token of the families named: one, or those a subquery
   * selects. Both tables in one transaction (the caller's, or one of its own): a process stopped
   * between them would leave the family's access tokens live, which UserInfo accepts.
   */
  async #revokeFamilies(families: string | Knex.QueryBuilder, now: number): Promise<void> {
    const revoke = async (db: Knex) => {
      for (const table of ['oidc_refresh_tokens', 'oidc_tokens']) {
        const live = db(table).whereNull('revoked_at');
        await (typeof families === 'string' ? live.where({ family_id: families }) : live.whereIn('family_id', families)).update({ revoked_at: now });
      }
    };
    if (this.#db.isTransaction) await revoke(this.#db);
    else await this.#db.transaction(revoke);
  }

  /**
   * The families a person holds at a client (the Applications section shows what an app may do
   * offline). A family with any token revoked is not one, whatever its live tokens: a rotation
   * refuses them all. That also covers a successor stored by a refused rotation whose family's
   * revocation never ran (the process stopped in between): nobody holds it.
   */
  async liveFamilies(profileId: string, now: number): Promise<Array<{ clientId: string; lastUsedAt: number }>> {
    const rows = await this.#db('oidc_refresh_tokens as t')
      .where({ 't.profile_id': profileId })
      .whereNull('t.revoked_at')
      .whereNull('t.used_at')
      .where('t.expires_at', '>', now)
      .where('t.family_expires_at', '>', now)
      .whereRaw(`not ${familyRevoked('t.family_id')}`)
      .select('t.client_id', 't.created_at');
    return rows.map((row: Record<string, unknown>) => ({ clientId: String(row.client_id), lastUsedAt: Number(row.created_at) }));
  }

  /**
   * Deletes tokens whose family or own lifetime ended (a reuse of one is refused the same way:
   * unknown). First it finishes any family's revocation that did not finish: a refused rotation
   * stores its successor (and access token) before the family is revoked, and a process that
   * stops in between leaves them live in a family whose revoked rows are all that say it ended,
   * and which this very sweep may delete.
   */
  async sweep(now: number): Promise<void> {
    await this.#revokeFamilies(this.#db('oidc_refresh_tokens').whereNotNull('revoked_at').distinct('family_id'), now);
    await this.#db('oidc_refresh_tokens').where('family_expires_at', '<', now).orWhere('expires_at', '<', now).delete();
  }
}
