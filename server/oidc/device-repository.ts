import type { Knex } from 'knex';
import type { OidcScope } from '../../shared/index.ts';
import { fromJson as json, numberOrNull } from '../../db/json.ts';

/** A device's request (RFC 8628), as stored: both codes by their hashes. */
export interface DeviceCodeRecord {
  deviceCodeHash: string;
  clientId: string;
  scopes: OidcScope[];
  status: 'pending' | 'approved' | 'denied';
  /** Once allowed: who, under which sign-in, consent and `tokenVersion`, in which browser session (its `sid` at the client). */
  profileId: string | null;
  tokenVersion: number | null;
  authTime: number | null;
  consentedAt: number | null;
  sid: string | null;
  createdAt: number;
  expiresAt: number;
  polledAt: number | null;
  intervalSeconds: number;
}

/** What the person's answer records: allowed, with what it was allowed under, or denied. */
export type DeviceDecisionRecord =
  | { status: 'approved'; profileId: string; tokenVersion: number; authTime: number; consentedAt: number; sid: string }
  | { status: 'denied' };

const toRecord = (row: Record<string, unknown>): DeviceCodeRecord => ({
  deviceCodeHash: String(row.device_code_hash),
  clientId: String(row.client_id),
  scopes: json<OidcScope[]>(row.scopes),
  status: row.status as DeviceCodeRecord['status'],
  profileId: (row.profile_id ?? null) as string | null,
  tokenVersion: numberOrNull(row.token_version),
  authTime: numberOrNull(row.auth_time),
  consentedAt: numberOrNull(row.consented_at),
  sid: (row.sid ?? null) as string | null,
  createdAt: Number(row.created_at),
  expiresAt: Number(row.expires_at),
  polledAt: numberOrNull(row.polled_at),
  intervalSeconds: Number(row.interval_seconds),
});

/** How much of a device's polling interval is forgiven, for the time an answer takes on its way. */
const POLL_LEEWAY_MS = 1000;

/** SQL for `oidc_device_codes`: devices' requests, until answered and collected, or expired. */
export class DeviceRepository {
  readonly #db: Knex;

  constructor(db: Knex) {
    this.#db = db;
  }

  /** Stores a new request; false when its user code's hash is taken (a live request has it: make another). */
  async insert(record: DeviceCodeRecord, userCodeHash: string): Promise<boolean> {
    const rows: unknown[] = await this.#db('oidc_device_codes')
      .insert({
        device_code_hash: record.deviceCodeHash,
        user_code_hash: userCodeHash,
        client_id: record.clientId,
        scopes: JSON.stringify(record.scopes),
        status: record.status,
        created_at: record.createdAt,
        expires_at: record.expiresAt,
        interval_seconds: record.intervalSeconds,
      })
      .onConflict('user_code_hash')
      .ignore()
      .returning('device_code_hash');
    return rows.length === 1;
  }

  async findByDeviceCode(deviceCodeHash: string): Promise<DeviceCodeRecord | null> {
    const row = await this.#db('oidc_device_codes').where({ device_code_hash: deviceCodeHash }).first();
    return row ? toRecord(row) : null;
  }

  /** The request a user code names, while it waits for the person's answer and has not expired. */
  async findPending(userCodeHash: string, now: number): Promise<DeviceCodeRecord | null> {
    const row = await this.#db('oidc_device_codes').where({ user_code_hash: userCodeHash, status: 'pending' }).where('expires_at', '>', now).first();
    return row ? toRecord(row) : null;
  }

  /** Records the person's answer, only while the request still waits for one and lives: false otherwise (answered in another tab, expired). */
  async decide(deviceCodeHash: string, decision: DeviceDecisionRecord, now: number): Promise<boolean> {
    const values =
      decision.status === 'approved'
        ? { status: 'approved', profile_id: decision.profileId, token_version: decision.tokenVersion, auth_time: decision.authTime, consented_at: decision.consentedAt, sid: decision.sid }
        : { status: 'denied' };
    const changed = await this.#db('oidc_device_codes').where({ device_code_hash: deviceCodeHash, status: 'pending' }).where('expires_at', '>', now).update(values);
    return changed === 1;
  }

  /**
   * Notes a poll of a pending request: null when it kept its interval; otherwise (RFC 8628 §3.5
   * `slow_down`) its interval grows by 5 s for good, and the new one is answered. Each is one
   * conditional statement, so two polls sent at once are never both within the interval. A
   * second of the interval is forgiven (`POLL_LEEWAY_MS`): a device that times its polls from
   * when it sent the last one is not slowed down by the time our answer took.
   */
  async notePoll(deviceCodeHash: string, now: number): Promise<number | null> {
    const kept = await this.#db('oidc_device_codes')
      .where({ device_code_hash: deviceCodeHash })
      .where((q) => q.whereNull('polled_at').orWhereRaw('polled_at + interval_seconds * 1000 <= ?', [now + POLL_LEEWAY_MS]))
      .update({ polled_at: now });
    if (kept === 1) return null;
    const rows: Array<{ interval_seconds: unknown }> = await this.#db('oidc_device_codes')
      .where({ device_code_hash: deviceCodeHash })
      .update({ polled_at: now, interval_seconds: this.#db.raw('interval_seconds + 5') })
      .returning('interval_seconds');
    // Swept meanwhile: the next poll finds nothing.
    return rows[0] === undefined ? null : Number(rows[0].interval_seconds);
  }

  /** Deletes expired requests (a collected one's single use is its token's row, which outlives it). */
  async sweep(now: number): Promise<void> {
    await this.#db('oidc_device_codes').where('expires_at', '<', now).delete();
  }
}
