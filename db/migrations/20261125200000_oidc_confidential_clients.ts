import type { Knex } from 'knex';

/**
 * The provider serves every kind of application (issue 26): a client has a way to authenticate
 * at the token endpoint (`none` for the public clients registered so far), the grants it may use,
 * its keys for `private_key_jwt`, its sign-out addresses, its subject type and its refresh-token
 * lifetimes, and, when it registered itself (RFC 7591), the hash of its registration access token
 * (RFC 7592). Beside it:
 * - `oidc_client_secrets`: its secrets, hashed; a rotated one lives on until `expires_at`;
 * - `oidc_registration_tokens`: the operators' one-use initial access tokens, hashed;
 * - `oidc_assertions`: the `jti` of every `private_key_jwt` assertion until it expires, so none is used twice;
 * - `oidc_refresh_tokens`: refresh tokens, hashed, in families (one per code): using a rotated one
 *   again revokes its family.
 * - `oidc_session_clients`: which clients signed a person in through which browser session, so
 *   that when the session ends (a logout, logout everywhere, a reset, a block, a merge) each is
 *   told by back-channel logout;
 * - `oidc_logout_deliveries`: those logout tokens, a durable queue delivered after the answer and
 *   retried with backoff, each leased by one process at a time.
 * An access token now names the refresh family it belongs to, so a family's revocation reaches it.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('oidc_clients', (t) => {
    t.string('auth_method', 40).notNullable().defaultTo('none');
    t.text('grant_types').notNullable().defaultTo('["authorization_code"]');
    t.text('jwks').nullable();
    t.text('jwks_uri').nullable();
    t.text('post_logout_redirect_uris').notNullable().defaultTo('[]');
    t.text('backchannel_logout_uri').nullable();
    t.boolean('backchannel_logout_session_required').notNullable().defaultTo(false);
    t.string('subject_type', 20).notNullable().defaultTo('public');
    t.text('sector_identifier_uri').nullable();
    t.integer('refresh_absolute_seconds').nullable();
    t.integer('refresh_idle_seconds').nullable();
    t.string('registration_token_hash', 64).nullable();
    t.text('metadata').nullable();
  });
  await db.schema.createTable('oidc_client_secrets', (t) => {
    t.string('secret_hash', 64).primary();
    t.string('client_id', 200).notNullable().references('id').inTable('oidc_clients').onDelete('CASCADE');
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').nullable();
    t.index(['client_id']);
  });
  await db.schema.createTable('oidc_registration_tokens', (t) => {
    t.string('token_hash', 64).primary();
    t.boolean('approved').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('used_at').nullable();
  });
  await db.schema.createTable('oidc_assertions', (t) => {
    t.string('client_id', 200).notNullable();
    t.string('jti', 200).notNullable();
    t.bigInteger('expires_at').notNullable();
    t.primary(['client_id', 'jti']);
  });
  await db.schema.createTable('oidc_refresh_tokens', (t) => {
    t.string('token_hash', 64).primary();
    t.string('family_id', 64).notNullable();
    t.string('client_id', 200).notNullable().references('id').inTable('oidc_clients').onDelete('CASCADE');
    t.string('profile_id', 300).notNullable().references('id').inTable('profiles').onDelete('CASCADE');
    t.text('scopes').notNullable();
    t.integer('token_version').notNullable();
    t.bigInteger('auth_time').notNullable();
    t.string('sid', 64).nullable();
    t.bigInteger('created_at').notNullable();
    // The family's end, which no rotation moves, and this token's own, which each rotation does.
    t.bigInteger('family_expires_at').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('used_at').nullable();
    t.bigInteger('revoked_at').nullable();
    t.index(['family_id']);
    t.index(['profile_id', 'client_id']);
  });
  await db.schema.createTable('oidc_session_clients', (t) => {
    t.string('session_id', 64).notNullable();
    t.string('client_id', 200).notNullable().references('id').inTable('oidc_clients').onDelete('CASCADE');
    // No foreign key: a deleted profile's clients are still told.
    t.string('profile_id', 300).notNullable();
    t.string('sid', 64).notNullable();
    // The person's tokenVersion when the client signed them in: moved on, the client's grant ended.
    t.integer('token_version').notNullable();
    t.bigInteger('created_at').notNullable();
    t.primary(['session_id', 'client_id']);
    t.index(['profile_id']);
  });
  // When each person's tokens at each client were last issued (the Applications section's "last used").
  await db.schema.createTable('oidc_client_uses', (t) => {
    t.string('profile_id', 300).notNullable().references('id').inTable('profiles').onDelete('CASCADE');
    t.string('client_id', 200).notNullable().references('id').inTable('oidc_clients').onDelete('CASCADE');
    t.bigInteger('last_used_at').notNullable();
    t.primary(['profile_id', 'client_id']);
  });
  await db.schema.createTable('oidc_logout_deliveries', (t) => {
    t.increments('id').primary();
    t.string('client_id', 200).notNullable();
    t.text('uri').notNullable();
    t.text('logout_token').notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.bigInteger('next_attempt_at').notNullable();
    t.bigInteger('leased_until').nullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('delivered_at').nullable();
    t.bigInteger('given_up_at').nullable();
    t.text('last_error').nullable();
    t.index(['next_attempt_at']);
  });
  await db.schema.alterTable('oidc_tokens', (t) => {
    t.string('family_id', 64).nullable();
    t.string('sid', 64).nullable();
    t.index(['family_id']);
  });
  await db.schema.alterTable('oidc_codes', (t) => {
    t.string('sid', 64).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('oidc_codes', (t) => {
    t.dropColumn('sid');
  });
  await db.schema.alterTable('oidc_tokens', (t) => {
    t.dropIndex(['family_id']);
    t.dropColumn('family_id');
    t.dropColumn('sid');
  });
  for (const table of ['oidc_client_uses', 'oidc_logout_deliveries', 'oidc_session_clients', 'oidc_refresh_tokens', 'oidc_assertions', 'oidc_registration_tokens', 'oidc_client_secrets']) await db.schema.dropTable(table);
  await db.schema.alterTable('oidc_clients', (t) => {
    for (const column of ['auth_method', 'grant_types', 'jwks', 'jwks_uri', 'post_logout_redirect_uris', 'backchannel_logout_uri', 'backchannel_logout_session_required', 'subject_type', 'sector_identifier_uri', 'refresh_absolute_seconds', 'refresh_idle_seconds', 'registration_token_hash', 'metadata']) t.dropColumn(column);
  });
}
