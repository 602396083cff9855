import type { Knex } from 'knex';

/**
 * Issue 29: uploads through tus 1.0 (`server/attachments/tus.ts`). One row per tus upload, owned
 * by a person (not a session); its bytes are the store's chunks of the upload's id, one per
 * PATCH (`parts`), so that any process answers any request of it.
 *
 * - `upload_length` null: deferred (`Upload-Defer-Length`); `upload_offset`: the bytes kept so far.
 * - `concat`: `partial` or `final` (the concatenation extension), null for an ordinary upload;
 *   `concat_header`, a final upload's `Upload-Concat` as HEAD gives it back.
 * - `metadata`: the `Upload-Metadata` header as received, given back by HEAD.
 * - `writer`, `writer_until`: the request writing it now (a lease: a second PATCH is refused
 *   with 423 while it runs, and a process that died writing lets go when it runs out).
 * - `url`: the stored file once complete; `expires_at`: `UPLOAD_ABANDON_SECONDS` after the last
 *   write, when the sweeper deletes an unfinished one.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('tus_uploads', (t) => {
    t.text('id').primary();
    t.text('profile_id').notNullable();
    t.text('invitation').notNullable();
    t.text('field').notNullable();
    t.text('extension').notNullable();
    t.text('metadata').notNullable();
    t.bigInteger('upload_length').nullable();
    t.bigInteger('upload_offset').notNullable().defaultTo(0);
    t.integer('parts').notNullable().defaultTo(0);
    t.text('concat').nullable();
    t.text('concat_header').nullable();
    t.text('writer').nullable();
    t.bigInteger('writer_until').nullable();
    t.text('url').nullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.index(['profile_id']);
    t.index(['expires_at']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('tus_uploads');
}
