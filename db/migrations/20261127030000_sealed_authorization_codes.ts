import type { Knex } from 'knex';

/**
 * Authorization codes are sealed, not stored (`server/oidc/codes.ts`): a code's single use is
 * its access token's row (`oidc_tokens.code_hash`, unique), so `oidc_codes` is no longer written
 * or read. Codes issued before this migration (at most ten minutes' worth) no longer redeem: the
 * application starts the sign-in again, which a person with a session and a consent passes
 * without a page. Stop every server process of the install before upgrading, as for any
 * migration.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.dropTable('oidc_codes');
}

/** The table as the migrations before this one left it (empty: stored codes were never kept anywhere else). */
export async function down(db: Knex): Promise<void> {
  await db.schema.createTable('oidc_codes', (t) => {
    t.string('code_hash', 64).primary();
    t.string('client_id', 200).notNullable().references('id').inTable('oidc_clients').onDelete('CASCADE');
    t.string('profile_id', 300).notNullable().references('id').inTable('profiles').onDelete('CASCADE');
    t.text('redirect_uri').notNullable();
    t.string('code_challenge', 128).notNullable();
    t.text('scopes').notNullable();
    t.string('nonce', 500).nullable();
    t.bigInteger('auth_time').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('used_at').nullable();
    t.integer('token_version').nullable();
    t.string('sid', 64).nullable();
  });
}
