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

  async addInstitution(domain: string, name: string, country: string | null): Promise<void> {
    await this.#db('institutions').insert({ domain: domain.toLowerCase(), name, country }).onConflict('domain').merge({ name, country });
  }

  /** The newest entries about a profile (as their target), newest first. */
  async auditOf(target: string, limit: number): Promise<Array<AuditEntry & { at: number }>> {
    const rows = await this.#db('audit_log').where({ target }).orderBy('at', 'desc').orderBy('id', 'desc').limit(limit);
    return rows.map((row) => ({
      at: Number(row.at),
      actor: String(row.actor),
      action: String(row.action),
      target: String(row.target),
      reason: row.reason ?? null,
      details: row.details ? (fromJson<Record<string, unknown>>(row.details) ?? undefined) : undefined,
    }));
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
