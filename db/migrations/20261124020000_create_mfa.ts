import type { Knex } from 'knex';

/**
 * Multi-factor sign-in (issue 17), one table per kind of record:
 * - `mfa_factors`: one row per person who has ever set a factor up: the TOTP secret (AES-256-GCM
 *   ciphertext, never the secret itself), the one being set up, the last TOTP time step accepted
 *   (a code is used once), whether email codes are on, the preferred method, and the lockout.
 * - `mfa_recovery_codes`: keyed hashes of the `XXXX-XXXX` codes; each used once.
 * - `mfa_email_codes`: the one live emailed code of a person (keyed hash); a new one replaces it.
 * - `mfa_pending`: sign-ins whose password was right and which wait for the second factor;
 *   the token's SHA-256 only, single-use, short-lived.
 * - `mfa_trusted_devices`: browsers that skip the second factor ("remember this device"), by
 *   the SHA-256 of their cookie, while the person's token version is the one they were
 *   remembered under.
 * - `mfa_reauth`: when a session last proved its holder again (password or a fresh code).
 * - `mfa_sign_ins`: how each session's sign-in was proved (RFC 8176 `amr` values, a JSON
 *   array), for the ID tokens of the sign-in provider; found by the person and the sign-in time.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('mfa_factors', (t) => {
    t.text('profile_id').primary();
    t.text('totp_secret').nullable();
    t.bigInteger('totp_enabled_at').nullable();
    t.text('totp_pending_secret').nullable();
    t.bigInteger('totp_pending_at').nullable();
    t.bigInteger('totp_last_step').nullable();
    t.bigInteger('email_enabled_at').nullable();
    t.text('preferred_method').nullable();
    t.integer('failed_attempts').notNullable().defaultTo(0);
    t.bigInteger('locked_until').nullable();
    t.bigInteger('updated_at').notNullable();
  });
  await db.schema.createTable('mfa_recovery_codes', (t) => {
    t.increments('id').primary();
    t.text('profile_id').notNullable().index();
    t.text('code_hash').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('used_at').nullable();
    t.unique(['profile_id', 'code_hash']);
  });
  await db.schema.createTable('mfa_email_codes', (t) => {
    t.text('profile_id').primary();
    t.text('code_hash').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable();
  });
  await db.schema.createTable('mfa_pending', (t) => {
    t.text('id').primary();
    t.text('token_hash').notNullable().unique();
    t.text('profile_id').notNullable().index();
    t.text('login_email').notNullable();
    t.integer('token_version').notNullable();
    t.integer('access_seconds').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('used_at').nullable();
  });
  await db.schema.createTable('mfa_trusted_devices', (t) => {
    t.increments('id').primary();
    t.text('profile_id').notNullable().index();
    t.text('token_hash').notNullable().unique();
    // The person's token version when the browser was remembered: a password reset or a logout
    // of every device moves it on, and the browser has to pass the second factor again.
    t.integer('token_version').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('last_used_at').nullable();
  });
  await db.schema.createTable('mfa_reauth', (t) => {
    t.text('session_id').primary();
    t.bigInteger('at').notNullable();
  });
  await db.schema.createTable('mfa_sign_ins', (t) => {
    t.text('session_id').primary();
    t.text('profile_id').notNullable();
    t.bigInteger('auth_time').notNullable();
    t.text('amr').notNullable();
    t.index(['profile_id', 'auth_time']);
  });
}

export async function down(db: Knex): Promise<void> {
  for (const table of ['mfa_sign_ins', 'mfa_reauth', 'mfa_trusted_devices', 'mfa_pending', 'mfa_email_codes', 'mfa_recovery_codes', 'mfa_factors']) {
    await db.schema.dropTable(table);
  }
}
