import type { Knex } from 'knex';

/**
 * The security pages of issue 27: how each session was signed in (`mfa_sign_ins.method`, and
 * the application whose sign-in page it was, `client`), and the "This was not me" links mailed
 * on a sign-in from a new browser (`sign_in_alerts`: the link's hash only, the session it is
 * about, single use, expiring).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('mfa_sign_ins', (t) => {
    t.text('method').nullable();
    t.text('client').nullable();
  });
  await db.schema.createTable('sign_in_alerts', (t) => {
    t.increments('id');
    t.string('token_hash', 64).notNullable().unique();
    t.text('profile_id').notNullable();
    t.text('session_id').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('used_at').nullable();
    t.index(['profile_id']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('sign_in_alerts');
  await db.schema.alterTable('mfa_sign_ins', (t) => {
    t.dropColumn('client');
    t.dropColumn('method');
  });
}
