import type { Knex } from 'knex';

/**
 * Resource servers (issue 26): an API an operator registers (`npm run admin -- oidc-client
 * resource-server`) that checks the access tokens of the applications it serves by
 * introspection (RFC 7662). It is a client with a secret and no grants; `introspects_for` lists
 * the clients whose access tokens it may introspect (null: an ordinary client, which sees only
 * its own).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('oidc_clients', (t) => {
    t.text('introspects_for').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('oidc_clients', (t) => {
    t.dropColumn('introspects_for');
  });
}
