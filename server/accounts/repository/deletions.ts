import type { Knex } from 'knex';
import { fromJson, numberOrNull } from '../../../db/json.ts';
import type { ProfileContent } from '../../../shared/index.ts';

/** A deletion asked for and neither cancelled nor carried out. */
export interface PendingDeletion {
  profileId: string;
  requestedAt: number;
  dueAt: number;
}

/** What the audit log may keep of an anonymised person's entries: no address, browser or email. */
const PERSONAL_DETAILS = ['address', 'userAgent', 'email', 'alternate', 'loginEmail'];

/**
 * SQL for `account_deletions` (a person's request to delete their account, its grace period) and
 * for anonymising an account once it is due: the accounts area's own tables only (profiles,
 * emails and their groups, sessions, one-time tokens, the audit log, the factors and passkeys);
 * what other areas hold is asked of them (`account-deletion.ts`). Given its Knex (or a transaction).
 */
export class DeletionsRepository {
  readonly #db: Knex;

  constructor(db: Knex) {
    this.#db = db;
  }

  /** Asks for a deletion (again): a cancelled or earlier request is replaced. */
  async request(profileId: string, now: number, dueAt: number): Promise<void> {
    await this.#db('account_deletions')
      .insert({ profile_id: profileId, requested_at: now, due_at: dueAt, cancelled_at: null, deleted_at: null })
      .onConflict('profile_id')
      .merge(['requested_at', 'due_at', 'cancelled_at', 'deleted_at']);
  }

  async pending(profileId: string): Promise<PendingDeletion | null> {
    const row = await this.#db('account_deletions').where({ profile_id: profileId }).whereNull('cancelled_at').whereNull('deleted_at').first();
    return row ? { profileId: String(row.profile_id), requestedAt: Number(row.requested_at), dueAt: Number(row.due_at) } : null;
  }

  /** Whether the profile was deleted at its owner's request and anonymised. */
  async anonymised(profileId: string): Promise<boolean> {
    const row = await this.#db('account_deletions').where({ profile_id: profileId }).whereNotNull('deleted_at').first('profile_id');
    return row !== undefined;
  }

  /** When a deletion of the profile was last cancelled (null: never). */
  async cancelledAt(profileId: string): Promise<number | null> {
    const row = await this.#db('account_deletions').where({ profile_id: profileId }).first('cancelled_at');
    return numberOrNull(row?.cancelled_at);
  }

  /** Cancels a pending deletion; false when there was none (one statement: of two sign-ins at once, one cancels). */
  async cancel(profileId: string, now: number): Promise<boolean> {
    const changed = await this.#db('account_deletions').where({ profile_id: profileId }).whereNull('cancelled_at').whereNull('deleted_at').update({ cancelled_at: now });
    return changed === 1;
  }

  /** Profiles whose grace period has ended, oldest first. */
  async due(now: number, limit: number): Promise<string[]> {
    return this.#db('account_deletions').whereNull('cancelled_at').whereNull('deleted_at').where('due_at', '<=', now).orderBy('due_at').limit(limit).pluck('profile_id');
  }

  /** Marks a due deletion as carried out; false when a sign-in cancelled it or another process did it first. */
  async markDeleted(profileId: string, now: number): Promise<boolean> {
    const changed = await this.#db('account_deletions').where({ profile_id: profileId }).whereNull('cancelled_at').whereNull('deleted_at').where('due_at', '<=', now).update({ deleted_at: now });
    return changed === 1;
  }

  // ---- anonymising -------------------------------------------------------------------------------------

  /**
   * The profile row becomes a tombstone: the given content (a placeholder name), no password, no
   * birth year or terms, no last sign-in; deleted (`ddate`), and its token version moved on so
   * every credential issued before ends.
   */
  async tombstone(profileId: string, content: ProfileContent, now: number): Promise<void> {
    await this.#db('profiles')
      .where({ id: profileId })
      .update({ content: JSON.stringify(content), password_hash: null, dob_timestamp: null, terms_timestamp: null, last_login: null, ddate: now, tmdate: now });
    await this.#db('profiles').where({ id: profileId }).increment('token_version', 1);
  }

  /** Removes every address of the profile, and the groups named after them; the addresses removed. */
  async removeEmails(profileId: string): Promise<string[]> {
    const emails: string[] = await this.#db('profile_emails').where({ profile_id: profileId }).pluck('email');
    if (emails.length > 0) {
      await this.#db('group_members').whereIn('member', emails).delete();
      await this.#db('groups').whereIn('id', emails).delete();
    }
    await this.#db('profile_emails').where({ profile_id: profileId }).delete();
    return emails;
  }

  /** Ends every session and forgets where each was opened from (browser, address, sign-in address). */
  async scrubSessions(profileId: string, now: number): Promise<void> {
    await this.#db('sessions').where({ profile_id: profileId }).whereNull('revoked_at').update({ revoked_at: now });
    await this.#db('sessions').where({ profile_id: profileId }).update({ user_agent: null, address: null, login_email: profileId });
  }

  /** Voids every outstanding one-time token and forgets the addresses they were for. */
  async scrubTokens(profileId: string, now: number): Promise<void> {
    await this.#db('account_tokens').where({ profile_id: profileId }).whereNull('used_at').update({ used_at: now });
    await this.#db('account_tokens').where({ profile_id: profileId }).update({ email: null });
  }

  /** Keeps the audit log's entries about the person (what, when, by whom) without addresses, browsers or emails. */
  async scrubAudit(profileId: string): Promise<void> {
    const rows: Array<{ id: number; details: string | null }> = await this.#db('audit_log')
      .where((q) => q.where({ target: profileId }).orWhere({ actor: profileId }))
      .whereNotNull('details')
      .select('id', 'details');
    for (const row of rows) {
      const details = row.details === null ? {} : fromJson<Record<string, unknown>>(row.details);
      const kept = Object.fromEntries(Object.entries(details).filter(([key]) => !PERSONAL_DETAILS.includes(key)));
      await this.#db('audit_log').where({ id: row.id }).update({ details: Object.keys(kept).length > 0 ? JSON.stringify(kept) : null });
    }
  }

  /** Every second factor, passkey and remembered browser of the profile, and their records. */
  async removeFactors(profileId: string): Promise<void> {
    for (const table of ['mfa_factors', 'mfa_recovery_codes', 'mfa_email_codes', 'mfa_pending', 'mfa_trusted_devices', 'mfa_sign_ins', 'passkeys', 'passkey_user_handles', 'passkey_challenges']) {
      await this.#db(table).where({ profile_id: profileId }).delete();
    }
  }
}
