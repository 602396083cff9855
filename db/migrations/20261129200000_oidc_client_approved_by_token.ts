import type { Knex } from 'knex';

/**
 * `oidc_clients.approved_by_token`: the client registered itself (RFC 7591) with an initial access
 * token made with `--approved`, and no operator has decided on it since. Such a client keeps its
 * approval through RFC 7592 updates, as the token's holder was trusted with any metadata. A client
 * an operator approved goes back to `pending` when an update changes what they were shown
 * (`registration.ts`, `changesWhatWasReviewed`).
 *
 * Rows before this migration did not record how they were approved. An approved registration
 * never updated nor decided on since (`created_at = updated_at`) can only have been approved by its
 * token; any other is taken as an operator's approval, the side that asks again rather than trusts.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('oidc_clients', (t) => {
    t.boolean('approved_by_token').notNullable().defaultTo(false);
  });
  await db('oidc_clients')
    .where({ status: 'approved' })
    .whereNotNull('registration_token_hash')
    .whereRaw('created_at = updated_at')
    .update({ approved_by_token: true });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('oidc_clients', (t) => {
    t.dropColumn('approved_by_token');
  });
}
