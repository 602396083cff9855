import type { Knex } from 'knex';
import { numberOrNull } from '../../../db/json.ts';

export interface FactorsRecord {
  profileId: string;
  /** Sealed (see `SecretBox`); null when TOTP is off. */
  totpSecret: string | null;
  totpEnabledAt: number | null;
  totpPendingSecret: string | null;
  totpPendingAt: number | null;
  totpLastStep: number | null;
  emailEnabledAt: number | null;
  preferredMethod: string | null;
  failedAttempts: number;
  lockedUntil: number | null;
}

export interface PendingRecord {
  id: string;
  profileId: string;
  loginEmail: string;
  tokenVersion: number;
  accessSeconds: number;
  expiresAt: number;
}


function factorsOf(row: Record<string, unknown>): FactorsRecord {
  return {
    profileId: String(row.profile_id),
    totpSecret: (row.totp_secret as string | null) ?? null,
    totpEnabledAt: numberOrNull(row.totp_enabled_at),
    totpPendingSecret: (row.totp_pending_secret as string | null) ?? null,
    totpPendingAt: numberOrNull(row.totp_pending_at),
    totpLastStep: numberOrNull(row.totp_last_step),
    emailEnabledAt: numberOrNull(row.email_enabled_at),
    preferredMethod: (row.preferred_method as string | null) ?? null,
    failedAttempts: Number(row.failed_attempts ?? 0),
    lockedUntil: numberOrNull(row.locked_until),
  };
}

/** The SQL of multi-factor sign-in (tables of migration `20261124020000_create_mfa`), on one Knex or one transaction. */
export class MfaRepository {
  readonly #db: Knex;

  constructor(db: Knex) {
    this.#db = db;
  }

  /** The same repository inside a transaction; `trx` lets the caller's other repositories join it. */
  transaction<T>(work: (repo: MfaRepository, trx: Knex.Transaction) => Promise<T>): Promise<T> {
    return this.#db.transaction((trx) => work(new MfaRepository(trx), trx));
  }

  // ---- factors ------------------------------------------------------------------------------------

  async factors(profileId: string): Promise<FactorsRecord | null> {
    const row = await this.#db('mfa_factors').where({ profile_id: profileId }).first();
    return row ? factorsOf(row) : null;
  }

  /** Writes the given columns of a person's row, creating it when there is none. */
  async #upsert(profileId: string, values: Record<string, unknown>, now: number): Promise<void> {
    await this.#db('mfa_factors')
      .insert({ profile_id: profileId, failed_attempts: 0, updated_at: now, ...values })
      .onConflict('profile_id')
      .merge({ ...values, updated_at: now });
  }

  setTotpPending(profileId: string, sealed: string, now: number): Promise<void> {
    return this.#upsert(profileId, { totp_pending_secret: sealed, totp_pending_at: now }, now);
  }

  /**
   * The secret being set up becomes the person's TOTP secret. No step counts as used yet: the
   * code that proved the set-up was typed in a signed-in session, and the real platform's own
   * client tests sign in with `totp.now()` right after setting up, often within the same step.
   */
  enableTotp(profileId: string, sealed: string, now: number): Promise<void> {
    return this.#upsert(profileId, { totp_secret: sealed, totp_enabled_at: now, totp_last_step: null, totp_pending_secret: null, totp_pending_at: null }, now);
  }

  disableTotp(profileId: string, now: number): Promise<void> {
    return this.#upsert(profileId, { totp_secret: null, totp_enabled_at: null, totp_last_step: null, totp_pending_secret: null, totp_pending_at: null }, now);
  }

  /** Takes a TOTP time step as used; false when it (or a later one) already was: a code counts once. */
  async acceptTotpStep(profileId: string, step: number): Promise<boolean> {
    const changed = await this.#db('mfa_factors')
      .where({ profile_id: profileId })
      .andWhere((q) => q.whereNull('totp_last_step').orWhere('totp_last_step', '<', step))
      .update({ totp_last_step: step });
    return changed === 1;
  }

  setEmail(profileId: string, enabledAt: number | null, now: number): Promise<void> {
    return this.#upsert(profileId, { email_enabled_at: enabledAt }, now);
  }

  setPreferred(profileId: string, method: string | null, now: number): Promise<void> {
    return this.#upsert(profileId, { preferred_method: method }, now);
  }

  /** Every factor off and every record of them gone (the operator's command for a person who lost them all). */
  async removeEverything(profileId: string): Promise<void> {
    await this.#db('mfa_factors').where({ profile_id: profileId }).delete();
    await this.#db('mfa_recovery_codes').where({ profile_id: profileId }).delete();
    await this.#db('mfa_email_codes').where({ profile_id: profileId }).delete();
    await this.#db('mfa_pending').where({ profile_id: profileId }).delete();
    await this.#db('mfa_trusted_devices').where({ profile_id: profileId }).delete();
  }

  /** Which second factors were set up at or after `since` (`undoSetUpSince` turns them off). */
  async setUpSince(profileId: string, since: number): Promise<{ totp: boolean; emailCodes: boolean }> {
    const factors = await this.factors(profileId);
    return { totp: factors?.totpSecret != null && factors.totpEnabledAt !== null && factors.totpEnabledAt >= since, emailCodes: factors?.emailEnabledAt != null && factors.emailEnabledAt >= since };
  }

  /**
   * Every second factor set up at or after `since` turned off, and recovery codes made since
   * forgotten ("This was not me": what whoever signed in then added). What was set up before stays.
   */
  async undoSetUpSince(profileId: string, since: number, now: number): Promise<{ totp: boolean; emailCodes: boolean; recoveryCodes: number }> {
    const { totp, emailCodes } = await this.setUpSince(profileId, since);
    if (totp) await this.disableTotp(profileId, now);
    if (emailCodes) {
      await this.setEmail(profileId, null, now);
      await this.deleteEmailCode(profileId);
    }
    const recoveryCodes = await this.#db('mfa_recovery_codes').where({ profile_id: profileId }).andWhere('created_at', '>=', since).delete();
    return { totp, emailCodes, recoveryCodes };
  }

  // ---- lockout ------------------------------------------------------------------------------------

  /**
   * Counts an attempt before its code is checked (so simultaneous guesses cannot all slip under
   * the limit): the attempts since the last success or lock, this one included, and the lock.
   */
  async beginAttempt(profileId: string, now: number): Promise<{ count: number; lockedUntil: number | null }> {
    await this.#upsert(profileId, {}, now);
    await this.#db('mfa_factors').where({ profile_id: profileId }).increment('failed_attempts', 1);
    const row = await this.#db('mfa_factors').where({ profile_id: profileId }).first('failed_attempts', 'locked_until');
    return { count: Number(row?.failed_attempts ?? 0), lockedUntil: numberOrNull(row?.locked_until) };
  }

  async lock(profileId: string, until: number): Promise<void> {
    await this.#db('mfa_factors').where({ profile_id: profileId }).update({ failed_attempts: 0, locked_until: until });
  }

  async clearFailures(profileId: string): Promise<void> {
    await this.#db('mfa_factors').where({ profile_id: profileId }).update({ failed_attempts: 0, locked_until: null });
  }

  // ---- recovery codes ----------------------------------------------------------------------------

  async replaceRecoveryCodes(profileId: string, hashes: string[], now: number): Promise<void> {
    await this.#db('mfa_recovery_codes').where({ profile_id: profileId }).delete();
    if (hashes.length > 0) await this.#db('mfa_recovery_codes').insert(hashes.map((code_hash) => ({ profile_id: profileId, code_hash, created_at: now })));
  }

  /** Uses a recovery code up; false when it is unknown or was used (of two simultaneous uses, one wins). */
  async useRecoveryCode(profileId: string, hash: string, now: number): Promise<boolean> {
    const changed = await this.#db('mfa_recovery_codes').where({ profile_id: profileId, code_hash: hash }).whereNull('used_at').update({ used_at: now });
    return changed === 1;
  }

  async recoveryCodesRemaining(profileId: string): Promise<number> {
    const row = await this.#db('mfa_recovery_codes').where({ profile_id: profileId }).whereNull('used_at').count({ n: '*' }).first();
    return Number(row?.n ?? 0);
  }

  // ---- emailed codes -----------------------------------------------------------------------------

  /** The person's one live emailed code: a new one replaces (voids) the older. */
  async putEmailCode(profileId: string, hash: string, now: number, expiresAt: number): Promise<void> {
    await this.#db('mfa_email_codes')
      .insert({ profile_id: profileId, code_hash: hash, created_at: now, expires_at: expiresAt })
      .onConflict('profile_id')
      .merge({ code_hash: hash, created_at: now, expires_at: expiresAt });
  }

  /** Uses the emailed code up when it matches and is live; of two simultaneous uses, one wins. */
  async useEmailCode(profileId: string, hash: string, now: number): Promise<boolean> {
    const changed = await this.#db('mfa_email_codes').where({ profile_id: profileId, code_hash: hash }).andWhere('expires_at', '>', now).delete();
    return changed === 1;
  }

  async deleteEmailCode(profileId: string): Promise<void> {
    await this.#db('mfa_email_codes').where({ profile_id: profileId }).delete();
  }

  // ---- pending sign-ins ---------------------------------------------------------------------------

  async insertPending(record: PendingRecord & { tokenHash: string; now: number }): Promise<void> {
    await this.#db('mfa_pending').insert({
      id: record.id,
      token_hash: record.tokenHash,
      profile_id: record.profileId,
      login_email: record.loginEmail,
      token_version: record.tokenVersion,
      access_seconds: record.accessSeconds,
      created_at: record.now,
      expires_at: record.expiresAt,
    });
  }

  async findPending(tokenHash: string, now: number): Promise<PendingRecord | null> {
    const row = await this.#db('mfa_pending').where({ token_hash: tokenHash }).whereNull('used_at').andWhere('expires_at', '>', now).first();
    if (!row) return null;
    return {
      id: String(row.id),
      profileId: String(row.profile_id),
      loginEmail: String(row.login_email),
      tokenVersion: Number(row.token_version),
      accessSeconds: Number(row.access_seconds),
      expiresAt: Number(row.expires_at),
    };
  }

  /** Uses a pending sign-in up; false when another request already did. */
  async consumePending(id: string, now: number): Promise<boolean> {
    return (await this.#db('mfa_pending').where({ id }).whereNull('used_at').update({ used_at: now })) === 1;
  }

  /**
   * Deletes what ended before `cutoff`: pending sign-ins, emailed codes, remembered browsers, and
   * the records kept per session (re-authentication, how a sign-in was proved) of sessions that
   * are gone, logged out or expired since before it.
   */
  async deleteEnded(cutoff: number): Promise<void> {
    await this.#db('mfa_pending').where('expires_at', '<=', cutoff).delete();
    await this.#db('mfa_email_codes').where('expires_at', '<=', cutoff).delete();
    await this.#db('mfa_trusted_devices').where('expires_at', '<=', cutoff).delete();
    for (const table of ['mfa_sign_ins', 'mfa_reauth']) {
      await this.#db(table)
        .whereNotExists((q) =>
          q
            .select(this.#db.raw('1'))
            .from('sessions')
            .whereRaw(`sessions.id = ${table}.session_id`)
            .andWhere('sessions.expires_at', '>', cutoff)
            .andWhere((r) => r.whereNull('sessions.revoked_at').orWhere('sessions.revoked_at', '>', cutoff)),
        )
        .delete();
    }
  }

  // ---- remembered browsers ------------------------------------------------------------------------

  async insertTrusted(profileId: string, tokenVersion: number, tokenHash: string, now: number, expiresAt: number): Promise<void> {
    await this.#db('mfa_trusted_devices').insert({ profile_id: profileId, token_version: tokenVersion, token_hash: tokenHash, created_at: now, expires_at: expiresAt });
  }

  /**
   * Whether the browser's cookie names a live remembered browser of this person, remembered under
   * their current token version (and notes its use).
   */
  async useTrusted(profileId: string, tokenVersion: number, tokenHash: string, now: number): Promise<boolean> {
    const changed = await this.#db('mfa_trusted_devices')
      .where({ profile_id: profileId, token_version: tokenVersion, token_hash: tokenHash })
      .andWhere('expires_at', '>', now)
      .update({ last_used_at: now });
    return changed === 1;
  }

  async trustedCount(profileId: string, tokenVersion: number, now: number): Promise<number> {
    const row = await this.#db('mfa_trusted_devices').where({ profile_id: profileId, token_version: tokenVersion }).andWhere('expires_at', '>', now).count({ n: '*' }).first();
    return Number(row?.n ?? 0);
  }

  async forgetTrusted(profileId: string): Promise<number> {
    return this.#db('mfa_trusted_devices').where({ profile_id: profileId }).delete();
  }

  // ---- re-authentication ---------------------------------------------------------------------------

  async setReauth(sessionId: string, at: number): Promise<void> {
    await this.#db('mfa_reauth').insert({ session_id: sessionId, at }).onConflict('session_id').merge({ at });
  }

  async reauthAt(sessionId: string): Promise<number | null> {
    const row = await this.#db('mfa_reauth').where({ session_id: sessionId }).first('at');
    return row ? Number(row.at) : null;
  }

  // ---- how sign-ins were proved --------------------------------------------------------------------

  /**
   * How a session's sign-in was proved (`amr`, and the `method` the pages name). A session signed
   * in to again in the same browser (`SignInService.open`) keeps its row with the new sign-in's.
   */
  async recordSignIn(sessionId: string, profileId: string, authTime: number, amr: string[], method: string | null = null): Promise<void> {
    const values = { auth_time: authTime, amr: JSON.stringify(amr), method, client: null };
    await this.#db('mfa_sign_ins').insert({ session_id: sessionId, profile_id: profileId, ...values }).onConflict('session_id').merge(values);
  }

  /** The session was signed in to on an application's sign-in page (the provider's): its name. */
  async setSignInClient(sessionId: string, client: string): Promise<void> {
    await this.#db('mfa_sign_ins').where({ session_id: sessionId }).update({ client: client.slice(0, 200) });
  }

  /** How each of these sessions was signed in to, by session id. */
  async signInMethods(sessionIds: string[]): Promise<Map<string, { method: string | null; client: string | null }>> {
    if (sessionIds.length === 0) return new Map();
    const rows: Array<{ session_id: string; method: string | null; client: string | null }> = await this.#db('mfa_sign_ins').whereIn('session_id', sessionIds).select('session_id', 'method', 'client');
    return new Map(rows.map((r) => [r.session_id, { method: r.method ?? null, client: r.client ?? null }]));
  }

  /** The `amr` of the person's sign-ins at that moment (normally one; the weakest first). */
  async signInsAt(profileId: string, authTime: number): Promise<string[][]> {
    const rows: Array<{ amr: string }> = await this.#db('mfa_sign_ins').where({ profile_id: profileId, auth_time: authTime }).select('amr');
    return rows.map((r) => JSON.parse(r.amr) as string[]).sort((a, b) => a.length - b.length);
  }

  // ---- "This was not me" links (the mail on a sign-in from a new browser) ---------------------------

  /** `email`: the address the mail carrying the link goes to. */
  async insertAlert(alert: { tokenHash: string; profileId: string; sessionId: string; email: string; now: number; expiresAt: number }): Promise<void> {
    await this.#db('sign_in_alerts').insert({ token_hash: alert.tokenHash, profile_id: alert.profileId, session_id: alert.sessionId, email: alert.email, created_at: alert.now, expires_at: alert.expiresAt });
  }

  /** The live (unused, unexpired) link a hash names; `email` null for a link mailed before addresses were kept. */
  async findAlert(tokenHash: string, now: number): Promise<{ id: number; profileId: string; sessionId: string; email: string | null; createdAt: number } | null> {
    const row = await this.#db('sign_in_alerts').where({ token_hash: tokenHash }).whereNull('used_at').andWhere('expires_at', '>', now).first();
    return row ? { id: Number(row.id), profileId: String(row.profile_id), sessionId: String(row.session_id), email: row.email === null ? null : String(row.email), createdAt: Number(row.created_at) } : null;
  }

  /** Uses a link up: of two simultaneous uses, one gets true. Every other link of the person goes with it (one act ends everything). */
  async useAlert(id: number, profileId: string, now: number): Promise<boolean> {
    const used = await this.#db('sign_in_alerts').where({ id }).whereNull('used_at').update({ used_at: now });
    if (used !== 1) return false;
    await this.#db('sign_in_alerts').where({ profile_id: profileId }).whereNull('used_at').update({ used_at: now });
    return true;
  }

  /** Forgets links that expired or were used before `cutoff`. */
  async deleteEndedAlerts(cutoff: number): Promise<void> {
    await this.#db('sign_in_alerts').where('expires_at', '<=', cutoff).orWhere('used_at', '<=', cutoff).delete();
  }
}
