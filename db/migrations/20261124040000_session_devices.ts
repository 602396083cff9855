import type { Knex } from 'knex';

/**
 * What the "Password & security" page shows of each session (issue 18): the browser's
 * User-Agent and the address it signed in from (both as sent, read with `bowser` when shown),
 * and when the session was last seen (its last sign-in or refresh). Older sessions have none.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('sessions', (t) => {
    t.text('user_agent').nullable();
    t.text('address').nullable();
    t.bigInteger('last_seen_at').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('sessions', (t) => {
    t.dropColumn('last_seen_at');
    t.dropColumn('address');
    t.dropColumn('user_agent');
  });
}
