import type { Knex } from 'knex';

/**
 * The sign-in provider: registered clients, signing keys, pending authorization requests
 * (interactions), the consents people gave, authorization codes and access tokens (both stored
 * only as hashes).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('oidc_clients', (t) => {
    t.string('id', 200).primary();
    t.string('name', 200).notNullable();
    t.text('redirect_uris').notNullable();
    t.text('scopes').notNullable();
    t.string('status', 20).notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
  });
  await db.schema.createTable('oidc_keys', (t) => {
    t.string('kid', 64).primary();
    t.text('private_jwk').notNullable();
    t.text('public_jwk').notNullable();
    t.bigInteger('created_at').notNullable();
    // A new key is published before it signs anything, so relying parties that cached the key
    // set have fetched it by then.
    t.bigInteger('activates_at').notNullable();
    // When a newer key took over signing; the public key stays published a while after.
    t.bigInteger('retired_at').nullable();
  });
  await db.schema.createTable('oidc_interactions', (t) => {
    t.string('id', 64).primary();
    t.string('client_id', 200).notNullable().references('id').inTable('oidc_clients').onDelete('CASCADE');
    t.text('params').notNullable();
    t.string('profile_id', 300).nullable();
    t.bigInteger('authenticated_at').nullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('completed_at').nullable();
  });
  await db.schema.createTable('oidc_consents', (t) => {
    t.string('profile_id', 300).notNullable().references('id').inTable('profiles').onDelete('CASCADE');
    t.string('client_id', 200).notNullable().references('id').inTable('oidc_clients').onDelete('CASCADE');
    t.text('scopes').notNullable();
    t.bigInteger('created_at').notNullable();
    t.primary(['profile_id', 'client_id']);
  });
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
  });
  await db.schema.createTable('oidc_tokens', (t) => {
    t.string('token_hash', 64).primary();
    t.string('code_hash', 64).notNullable();
    t.string('client_id', 200).notNullable().references('id').inTable('oidc_clients').onDelete('CASCADE');
    t.string('profile_id', 300).notNullable().references('id').inTable('profiles').onDelete('CASCADE');
    t.text('scopes').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('revoked_at').nullable();
    t.index(['code_hash']);
  });
}

export async function down(db: Knex): Promise<void> {
  for (const table of ['oidc_tokens', 'oidc_codes', 'oidc_consents', 'oidc_interactions', 'oidc_keys', 'oidc_clients']) {
    await db.schema.dropTable(table);
  }
}
