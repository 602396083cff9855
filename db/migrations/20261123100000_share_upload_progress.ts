import type { Knex } from 'knex';

/**
 * What decides a chunked upload's answer, moved from each process's memory into the database so
 * that any process answers alike: the bytes an upload has received so far (a conditional
 * `UPDATE` keeps them within the field's limit however many chunks arrive at once), and the
 * chunk requests under way for each person's upload (`upload_arrivals`: the last chunks sent
 * together wait for each other, whichever process received them).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('chunked_uploads', (t) => {
    t.bigInteger('received_bytes').notNullable().defaultTo(0);
  });
  // Unfinished uploads from before: their chunks so far.
  await db('chunked_uploads').update({
    received_bytes: db.raw('coalesce((select sum(size) from upload_chunks where upload_chunks.upload_id = chunked_uploads.id), 0)'),
  });
  await db.schema.createTable('upload_arrivals', (t) => {
    t.text('id').primary();
    t.text('profile_id').notNullable();
    t.text('client_upload_id').notNullable();
    // ms since the epoch: an arrival whose process stopped is ignored after a while, and swept.
    t.bigInteger('arrived_at').notNullable();
    t.index(['profile_id', 'client_upload_id']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('upload_arrivals');
  await db.schema.alterTable('chunked_uploads', (t) => {
    t.dropColumn('received_bytes');
  });
}
