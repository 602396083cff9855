import type { Knex } from 'knex';
import { ACTIVE_STATES } from '../accounts/session-rule.ts';

/** A client a person signed in to through a browser session. */
export interface SessionClient {
  sessionId: string;
  clientId: string;
  profileId: string;
  sid: string;
  /** The person's `tokenVersion` when the client signed them in. */
  tokenVersion: number;
}

/** A logout token waiting to be POSTed to a client's `backchannel_logout_uri`. */
export interface Delivery {
  id: number;
  clientId: string;
  uri: string;
  logoutToken: string;
  attempts: number;
}

const toSessionClient = (row: Record<string, unknown>): SessionClient => ({
  sessionId: String(row.session_id),
  clientId: String(row.client_id),
  profileId: String(row.profile_id),
  sid: String(row.sid),
  tokenVersion: Number(row.token_version),
});

/**
 * SQL for back-channel logout (OpenID Connect Back-Channel Logout 1.0): which clients signed a
 * person in through which browser session, and the queue of logout tokens to deliver.
 */
export class LogoutRepository {
  readonly #db: Knex;

  constructor(db: Knex) {
    this.#db = db;
  }

  /** Remembers that `clientId` signed its person in through the session, under their `tokenVersion` of now. */
  async recordSessionClient(entry: SessionClient, now: number): Promise<void> {
    await this.#db('oidc_session_clients')
      .insert({ session_id: entry.sessionId, client_id: entry.clientId, profile_id: entry.profileId, sid: entry.sid, token_version: entry.tokenVersion, created_at: now })
      .onConflict(['session_id', 'client_id'])
      .merge({ token_version: entry.tokenVersion });
  }

  /**
   * Clients whose session, or whose grant, has ended by a person's or operator's act: the session
   * was signed out or is gone, the person's `tokenVersion` moved past the one the client signed
   * them in under (a reset, logout everywhere, even for the session that asked for it, a block, a
   * merge: every token the client holds then fails), the person revoked the client (no consent
   * left), or the person may no longer hold sessions. A session that merely expired is
   * not a sign-out (its rows are forgotten by `sweep`).
   */
  async endedSessionClients(limit: number): Promise<SessionClient[]> {
    const rows = await this.#db('oidc_session_clients as c')
      .leftJoin('sessions as s', 's.id', 'c.session_id')
      .leftJoin('profiles as p', 'p.id', 'c.profile_id')
      .leftJoin('oidc_consents as k', (join) => {
        join.on('k.profile_id', '=', 'c.profile_id').andOn('k.client_id', '=', 'c.client_id');
      })
      .where((q) =>
        q
          .whereNull('s.id')
          .orWhereNull('k.profile_id')
          .orWhereNotNull('s.revoked_at')
          .orWhereNull('p.id')
          .orWhereNotNull('p.ddate')
          .orWhereNotIn('p.state', [...ACTIVE_STATES])
          .orWhereRaw('c.token_version <> p.token_version'),
      )
      .select('c.session_id', 'c.client_id', 'c.profile_id', 'c.sid', 'c.token_version')
      .limit(limit);
    return rows.map(toSessionClient);
  }

  /**
   * Forgets a session's client and queues its logout token (when it has one: a client without
   * a `backchannel_logout_uri` is only forgotten), in one transaction: of processes doing the
   * same at once, one deletes the row and queues; the others find nothing to delete.
   */
  async endSessionClient(entry: SessionClient, delivery: { uri: string; logoutToken: string } | null, now: number): Promise<boolean> {
    return this.#db.transaction(async (trx) => {
      const deleted = await trx('oidc_session_clients').where({ session_id: entry.sessionId, client_id: entry.clientId }).delete();
      if (deleted !== 1) return false;
      if (delivery) await new LogoutRepository(trx).queue(entry.clientId, delivery, now);
      return true;
    });
  }

  /** Whether any browser session we still know of signed the person in to the client (`oidc_session_clients`). */
  async signedInThrough(profileId: string, clientId: string): Promise<boolean> {
    return (await this.#db('oidc_session_clients').where({ profile_id: profileId, client_id: clientId }).first('session_id')) !== undefined;
  }

  /** Queues a logout token for delivery now. */
  async queue(clientId: string, delivery: { uri: string; logoutToken: string }, now: number): Promise<void> {
    await this.#db('oidc_logout_deliveries').insert({ client_id: clientId, uri: delivery.uri, logout_token: delivery.logoutToken, attempts: 0, next_attempt_at: now, created_at: now });
  }

  /**
   * Leases up to `limit` deliveries that are due, each until `leaseUntil`: one conditional UPDATE
   * per delivery, so two processes never send the same one at once. The UPDATE repeats every
   * condition of being due, not only the lease's: `delivered` and `failed` clear the lease, so a
   * delivery another process finished (or failed, and put off) after the SELECT would otherwise
   * be leased, and sent, again.
   */
  async leaseDue(now: number, leaseUntil: number, limit: number): Promise<Delivery[]> {
    const isDue = (q: Knex.QueryBuilder) =>
      q
        .whereNull('delivered_at')
        .whereNull('given_up_at')
        .where('next_attempt_at', '<=', now)
        .andWhere((lease) => lease.whereNull('leased_until').orWhere('leased_until', '<', now));
    const due = await isDue(this.#db('oidc_logout_deliveries'))
      .orderBy('next_attempt_at')
      .limit(limit)
      .select('id', 'client_id', 'uri', 'logout_token', 'attempts');
    const leased: Delivery[] = [];
    for (const row of due as Array<Record<string, unknown>>) {
      const taken = await isDue(this.#db('oidc_logout_deliveries').where({ id: row.id })).update({ leased_until: leaseUntil });
      if (taken === 1) leased.push({ id: Number(row.id), clientId: String(row.client_id), uri: String(row.uri), logoutToken: String(row.logout_token), attempts: Number(row.attempts) });
    }
    return leased;
  }

  async delivered(id: number, now: number): Promise<void> {
    await this.#db('oidc_logout_deliveries').where({ id }).update({ delivered_at: now, leased_until: null, attempts: this.#db.raw('attempts + 1') });
  }

  /** A failed attempt: tried again at `nextAttemptAt`, or given up (null). */
  async failed(id: number, error: string, nextAttemptAt: number | null, now: number): Promise<void> {
    await this.#db('oidc_logout_deliveries')
      .where({ id })
      .update({ attempts: this.#db.raw('attempts + 1'), last_error: error.slice(0, 500), leased_until: null, ...(nextAttemptAt === null ? { given_up_at: now } : { next_attempt_at: nextAttemptAt }) });
  }

  /** Forgets deliveries done or given up a week ago, and the clients of sessions that expired. */
  async sweep(now: number): Promise<void> {
    const weekAgo = now - 7 * 24 * 3600 * 1000;
    await this.#db('oidc_logout_deliveries').where('delivered_at', '<', weekAgo).orWhere('given_up_at', '<', weekAgo).delete();
    await this.#db('oidc_session_clients')
      .whereIn('session_id', this.#db('sessions').select('id').where('expires_at', '<', now))
      .delete();
  }
}
