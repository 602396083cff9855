import type { Knex } from 'knex';

/** Operator settings (moderation on or off, ...), changed with `npm run admin -- settings`. */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('settings', (t) => {
    t.string('key', 100).primary();
    t.text('value').notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('settings');
}
