import type { Knex } from 'knex';

/**
 * Parallel tus uploads without a copy (issue 29, `server/attachments/tus.ts`): the partial
 * uploads of one file are placed one after another in one data file on the local disk, in the
 * order they were created, so that their final upload is that file when it names them in that
 * order (as tus-js-client does).
 *
 * - `span`: the partial upload whose data file this one's bytes go into (its own id: it began
 *   the span); null for every other upload.
 * - `span_at`: where this upload's first byte goes in that file.
 * - `span_end`: on the span's first upload only, where the next partial upload would go; null
 *   once the span takes no more (a final upload named its parts).
 *
 * On any store the span's first part is the file's start, so it is hashed as it arrives.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('tus_uploads', (t) => {
    t.text('span').nullable();
    t.bigInteger('span_at').nullable();
    t.bigInteger('span_end').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('tus_uploads', (t) => {
    t.dropColumn('span');
    t.dropColumn('span_at');
    t.dropColumn('span_end');
  });
}
