import type { Knex } from 'knex';

/**
 * A note can be deleted (`DELETE /notes`, or `POST /notes/edits` with `note.ddate`): it keeps its
 * row, its revisions and its files' records, and `ddate` says when. Reads leave it out unless
 * they ask for the trash. Each revision records the `ddate` it set, so the history shows it.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('notes', (t) => {
    t.bigInteger('ddate').nullable();
  });
  await db.schema.alterTable('note_edits', (t) => {
    t.bigInteger('ddate').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('note_edits', (t) => {
    t.dropColumn('ddate');
  });
  await db.schema.alterTable('notes', (t) => {
    t.dropColumn('ddate');
  });
}
