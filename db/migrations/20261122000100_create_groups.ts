import type { Knex } from 'knex';

/** Groups (`~Id`, an email, a venue's organisers, the moderators) and their members. */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('groups', (t) => {
    t.string('id', 300).primary();
    // The group's other fields (readers, writers, impersonators, content, ...) as JSON.
    t.text('data').notNullable();
    t.bigInteger('tcdate').notNullable();
    t.bigInteger('tmdate').notNullable();
  });
  await db.schema.createTable('group_members', (t) => {
    t.string('group_id', 300).notNullable().references('id').inTable('groups').onDelete('CASCADE');
    t.string('member', 300).notNullable();
    t.primary(['group_id', 'member']);
    t.index(['member']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('group_members');
  await db.schema.dropTable('groups');
}
