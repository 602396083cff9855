import type { Knex } from 'knex';

/**
 * The device authorization grant (RFC 8628, `server/oidc/device.ts`): a device's request, by the
 * hash of its device code (what the device polls with) and of its user code (what the person
 * types on the device page), until the person allows or denies it and the device collects its
 * tokens, or it expires (ten minutes). Both codes are stored hashed, as every token is. Its
 * single redemption is its access token's row (`oidc_tokens.code_hash`, the device code's hash),
 * as a sealed authorization code's is.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('oidc_device_codes', (t) => {
    t.text('device_code_hash').primary();
    t.text('user_code_hash').notNullable().unique();
    t.text('client_id').notNullable().references('id').inTable('oidc_clients').onDelete('CASCADE');
    t.text('scopes').notNullable();
    /** `pending`, then `approved` or `denied` by the person. */
    t.text('status').notNullable();
    // Who allowed it, and the sign-in and consent it was allowed under (null while pending).
    t.text('profile_id').nullable().references('id').inTable('profiles').onDelete('CASCADE');
    t.integer('token_version').nullable();
    t.bigInteger('auth_time').nullable();
    t.bigInteger('consented_at').nullable();
    t.text('sid').nullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable();
    // The device's last poll, and how long it must wait between two (RFC 8628 §3.5: `slow_down` adds 5 s).
    t.bigInteger('polled_at').nullable();
    t.integer('interval_seconds').notNullable();
    t.index(['expires_at']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('oidc_device_codes');
}
