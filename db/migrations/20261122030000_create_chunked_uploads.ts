import type { Knex } from 'knex';

/**
 * Files uploaded in chunks: one row per (user, clientUploadId) with its state, one row per chunk
 * received; and the file URLs each note's fields hold, so a stored PDF can be served to the
 * readers of any note that references it.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('chunked_uploads', (t) => {
    // Server-made: the client's clientUploadId never becomes part of a path.
    t.string('id', 64).primary();
    t.string('profile_id', 300).notNullable().references('id').inTable('profiles').onDelete('CASCADE');
    t.string('client_upload_id', 25).notNullable();
    t.string('invitation', 300).notNullable();
    t.string('field', 80).notNullable();
    t.string('extension', 10).notNullable();
    t.integer('total_chunks').notNullable();
    // 0 or 1 once the client's counting is known.
    t.integer('index_base').nullable();
    // receiving → assembling → done
    t.string('status', 20).notNullable();
    t.string('url', 200).nullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.unique(['profile_id', 'client_upload_id']);
    t.index(['status', 'updated_at']);
  });
  await db.schema.createTable('upload_chunks', (t) => {
    t.string('upload_id', 64).notNullable().references('id').inTable('chunked_uploads').onDelete('CASCADE');
    t.integer('chunk_index').notNullable();
    t.bigInteger('size').notNullable();
    t.primary(['upload_id', 'chunk_index']);
  });
  await db.schema.createTable('note_files', (t) => {
    t.string('note_id', 40).notNullable().references('id').inTable('notes').onDelete('CASCADE');
    t.string('field', 80).notNullable();
    t.string('url', 200).notNullable();
    // Every file a note's fields held, in any revision: earlier PDFs stay readable to its readers.
    t.primary(['note_id', 'field', 'url']);
    t.index(['url']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('note_files');
  await db.schema.dropTable('upload_chunks');
  await db.schema.dropTable('chunked_uploads');
}
