import type { Knex } from 'knex';

/**
 * Pushed authorization requests (RFC 9126, `server/oidc/pushed.ts`): an authorization request a
 * client sent to `/oidc/par` beforehand, by the hash of the `request_uri` it was answered, for
 * one use at the authorization endpoint within its minute. What is kept is the request's own
 * parameters, checked again when used; never the client's credentials.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('oidc_pushed_requests', (t) => {
    t.text('uri_hash').primary();
    t.text('client_id').notNullable().references('id').inTable('oidc_clients').onDelete('CASCADE');
    t.text('params').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.index(['expires_at']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('oidc_pushed_requests');
}
