import type { Knex } from 'knex';

/**
 * Parallel tus uploads on S3 without a second copy (issue 29, `server/attachments/tus-spans.ts`):
 * a span's parts are sent as the parts of one S3 multipart upload, which becomes the file when
 * the final upload names exactly those parts in that order.
 *
 * On `tus_uploads`:
 * - `span_part`: the upload's S3 part number in its span (its place among the span's parts, from
 *   1); null outside a span.
 * - `span_parts`: on a span's first upload, how many parts the span has taken (the next part's
 *   number is one more), moved with `span_end` in one conditional update.
 *
 * `tus_spans`, one row per span sent as an S3 multipart upload (none on the local disk), kept
 * while any upload of the span is (its first one may be ended before the others):
 * - `upload_id`: the S3 multipart upload's id;
 * - `kept`: the parts whose bytes are in it, one `\n<part> <ETag> <bytes>` each, appended by one
 *   conditional statement while `settled` is false;
 * - `settled`: the multipart upload is being completed (or was), so no part is added any more.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('tus_uploads', (t) => {
    t.integer('span_part').nullable();
    t.integer('span_parts').nullable();
    // Whether a span has uploads left, and which spans have none (`TusRepository.spanInUse`, `orphanSpans`).
    t.index(['span'], 'tus_uploads_span');
  });
  await db.schema.createTable('tus_spans', (t) => {
    t.text('id').primary();
    t.text('upload_id').notNullable();
    t.text('kept').notNullable().defaultTo('');
    t.boolean('settled').notNullable().defaultTo(false);
    t.bigInteger('created_at').notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('tus_spans');
  await db.schema.alterTable('tus_uploads', (t) => {
    t.dropIndex(['span'], 'tus_uploads_span');
    t.dropColumn('span_part');
    t.dropColumn('span_parts');
  });
}
