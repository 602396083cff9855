import type { Knex } from 'knex';
import { fromJson as json } from '../../db/json.ts';
import { rawRows } from '../../db/knex.ts';

/** SQL for `oidc_pushed_requests`: pushed authorization requests (RFC 9126), until used or expired. */
export class PushedRepository {
  readonly #db: Knex;

  constructor(db: Knex) {
    this.#db = db;
  }

  async insert(uriHash: string, clientId: string, params: Record<string, string>, now: number, expiresAt: number): Promise<void> {
    await this.#db('oidc_pushed_requests').insert({ uri_hash: uriHash, client_id: clientId, params: JSON.stringify(params), created_at: now, expires_at: expiresAt });
  }

  /**
   * Uses up a live request of `clientId` in one statement, and answers its parameters: null when
   * there is none (unknown, expired, used, or another client's, which stays as it was).
   */
  async take(uriHash: string, clientId: string, now: number): Promise<Record<string, string> | null> {
    // Raw SQL: Knex's SQLite client answers a delete with its count, whatever `returning` asks.
    const answer: unknown = await this.#db.raw('delete from oidc_pushed_requests where uri_hash = ? and client_id = ? and expires_at > ? returning params', [uriHash, clientId, now]);
    const [row] = rawRows<{ params: unknown }>(answer);
    return row ? json<Record<string, string>>(row.params) : null;
  }

  async sweep(now: number): Promise<void> {
    await this.#db('oidc_pushed_requests').where('expires_at', '<', now).delete();
  }
}
