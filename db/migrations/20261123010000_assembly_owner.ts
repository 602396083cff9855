import type { Knex } from 'knex';

/**
 * Which process (since which start) is assembling a chunked upload, so that an assembly whose
 * process stopped can be redone at once instead of after a timeout.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('chunked_uploads', (t) => {
    t.string('assembly_owner', 60).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('chunked_uploads', (t) => {
    t.dropColumn('assembly_owner');
  });
}
