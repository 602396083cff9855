import { fromJson } from '../../../db/json.ts';
import type { Knex } from 'knex';

export interface AuditEntry {
  actor: string;
  action: string;
  target: string;
  reason?: string | null | undefined;
  details?: Record<string, unknown> | undefined;
}

/** SQL for `settings`, `institutions` and `audit_log`. Given its Knex (or a transaction). */
export class SettingsRepository {
  readonly #db: Knex;

  constructor(db: Knex) {
    this.#db = db;
  }

  async get(key: string): Promise<string | null> {
    const row = await this.#db('settings').where({ key }).first('value');
    return row ? String(row.value) : null;
  }

  async set(key: string, value: string): Promise<void> {
    await this.#db('settings').insert({ key, value }).onConflict('key').merge({ value });
  }

  async institutionDomains(): Promise<string[]> {
    return this.#db('institutions').orderBy('domain').pluck('domain');
  }

  /** The institution list (domain, name, country), by domain: what the profile page offers. */
  async institutions(): Promise<Array<{ domain: string; name: string; country: string | null }>> {
    const rows: Array<{ domain: string; name: string; country: string | null }> = await this.#db('institutions').orderBy('domain').select('domain', 'name', 'country');
    return rows.map((row) => ({ domain: String(row.domain), name: String(row.name), country: row.country === null ? null : String(row.country) }));
  }

  async addInstitution(domain: string, name: string, country: string | null): Promise<void> {
    await this.#db('institutions').insert({ domain: domain.toLowerCase(), name, country }).onConflict('domain').merge({ name, country });
  }

  /** The newest entries about a profile (as their target), newest first. */
  async auditOf(target: string, limit: number): Promise<Array<AuditEntry & { at: number }>> {
    const rows = await this.#db('audit_log').where({ target }).orderBy('at', 'desc').orderBy('id', 'desc').limit(limit);
    return rows.map(auditEntry);
  }

  /**
   * A page of the entries about a profile, newest first, with their ids: those older than the
   * entry `beforeId` when given (the security page's "Older events").
   */
  async auditPageOf(target: string, limit: number, beforeId?: number): Promise<Array<AuditEntry & { id: number; at: number }>> {
    const query = this.#db('audit_log').where({ target });
    if (beforeId !== undefined) query.where('id', '<', beforeId);
    const rows = await query.orderBy('id', 'desc').limit(limit);
    return rows.map(auditEntry);
  }

  /** How many entries of one action about a profile were written since `since` (ms). */
  async countAudit(target: string, action: string, since: number): Promise<number> {
    const row = await this.#db('audit_log').where({ target, action }).andWhere('at', '>=', since).count({ n: '*' }).first();
    return Number(row?.n ?? 0);
  }

  /** Adds to the details of an entry (by its id). */
  async amendAudit(id: number, details: Record<string, unknown>): Promise<void> {
    await this.#db('audit_log').where({ id }).update({ details: JSON.stringify(details) });
  }

  /** Deletes the entries of one action written before `before` (ms). */
  async deleteAudit(action: string, before: number): Promise<void> {
    await this.#db('audit_log').where({ action }).where('at', '<', before).delete();
  }

  async audit(entry: AuditEntry, now: number): Promise<void> {
    await this.#db('audit_log').insert({
      at: now,
      actor: entry.actor,
      action: entry.action,
      target: entry.target,
      reason: entry.reason ?? null,
      details: entry.details ? JSON.stringify(entry.details) : null,
    });
  }
}

/** An `audit_log` row as an entry, with its id and time. */
function auditEntry(row: Record<string, unknown>): AuditEntry & { id: number; at: number } {
  return {
    id: Number(row.id),
    at: Number(row.at),
    actor: String(row.actor),
    action: String(row.action),
    target: String(row.target),
    reason: typeof row.reason === 'string' ? row.reason : null,
    details: row.details ? (fromJson<Record<string, unknown> | null>(row.details) ?? undefined) : undefined,
  };
}
