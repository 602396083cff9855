import type { Knex } from 'knex';

/**
 * A person's request to delete their account (issue 27): when it was asked, when the grace
 * period ends (`due_at`), and whether a sign-in cancelled it or the sweeper carried it out. A
 * table of its own, not a profile state: the spec's states are a closed list, and a profile
 * waiting for its deletion is still active (signing in cancels it).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('account_deletions', (t) => {
    t.string('profile_id', 300).primary().references('id').inTable('profiles').onDelete('CASCADE');
    t.bigInteger('requested_at').notNullable();
    t.bigInteger('due_at').notNullable();
    t.bigInteger('cancelled_at').nullable();
    t.bigInteger('deleted_at').nullable();
    t.index(['due_at']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('account_deletions');
}
