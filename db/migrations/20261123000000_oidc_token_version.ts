import type { Knex } from 'knex';

/**
 * The profile's `tokenVersion` when an authorization code or access token was issued. A password
 * reset, a logout of every device, a block, a deletion or a merge moves the profile's version on,
 * and a code or token carrying an older one (or none: issued before this column) is refused, as
 * the service's own session tokens are.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('oidc_codes', (t) => {
    t.integer('token_version').nullable();
  });
  await db.schema.alterTable('oidc_tokens', (t) => {
    t.integer('token_version').nullable();
    t.index(['profile_id', 'client_id']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('oidc_tokens', (t) => {
    t.dropIndex(['profile_id', 'client_id']);
    t.dropColumn('token_version');
  });
  await db.schema.alterTable('oidc_codes', (t) => {
    t.dropColumn('token_version');
  });
}
