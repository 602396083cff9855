import type { Knex } from 'knex';

/**
 * The address a new-browser mail went to (`sign_in_alerts.email`): the one its "This was not me"
 * link proves the person reads, to which the reset link then goes, and which is given back to the
 * profile if whoever signed in had removed it (`server/accounts/sign-in-alerts.ts`). Null for a
 * mail sent before this column: the reset link then goes to an address held before the sign-in.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('sign_in_alerts', (t) => {
    t.text('email').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('sign_in_alerts', (t) => {
    t.dropColumn('email');
  });
}
