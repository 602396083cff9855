import type { Knex } from 'knex';
import { isPostgres } from '../postgres.ts';

/**
 * A chunk's record counts itself: a trigger on `upload_chunks` adds each inserted chunk's bytes
 * to its upload's `received_bytes`, and, while the upload is receiving, moves its `updated_at`
 * (what the sweep of abandoned uploads reads) to the chunk's `recorded_at`, a column this adds.
 * The insert itself selects from the upload's row only while the upload is not done and its
 * bytes with this chunk's stay within the field's limit (`AttachmentsRepository.recordChunk`).
 *
 * Before, a chunk was recorded by a transaction of three statements (the upload's row touched,
 * the chunk inserted, its bytes counted by a conditional update that undid the chunk when it
 * failed), five round trips to SQLite's one connection with `BEGIN IMMEDIATE` and `COMMIT`, on
 * the path of every chunk. One statement and its trigger are as atomic: the bytes are counted
 * exactly when the chunk is recorded, a crash keeps both or neither, and a chunk over the limit
 * records nothing. On SQLite, whose statements write one at a time, that is the whole record; on
 * PostgreSQL the statement runs after the upload's row is locked, in a transaction, so chunks
 * arriving together on several connections are counted one after the other.
 *
 * Rows inserted before this have no `recorded_at`: the trigger then leaves `updated_at` alone. A
 * later migration that makes Knex rebuild `upload_chunks` on SQLite (which copies a table without
 * its triggers) must create it again: `test/db/migrations.test.ts` checks it exists.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('upload_chunks', (t) => {
    t.bigInteger('recorded_at').nullable();
  });
  const count = `
    UPDATE chunked_uploads
    SET received_bytes = received_bytes + NEW.size,
        updated_at = CASE WHEN status = 'receiving' AND NEW.recorded_at IS NOT NULL THEN NEW.recorded_at ELSE updated_at END
    WHERE id = NEW.upload_id;`;
  if (isPostgres(db)) {
    await db.raw(`
      CREATE FUNCTION upload_chunk_counted() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        ${count}
        RETURN NULL;
      END
      $$`);
    await db.raw('CREATE TRIGGER upload_chunk_counted AFTER INSERT ON upload_chunks FOR EACH ROW EXECUTE FUNCTION upload_chunk_counted()');
  } else {
    await db.raw(`
      CREATE TRIGGER upload_chunk_counted AFTER INSERT ON upload_chunks
      FOR EACH ROW
      BEGIN
        ${count}
      END`);
  }
}

export async function down(db: Knex): Promise<void> {
  if (isPostgres(db)) {
    await db.raw('DROP TRIGGER IF EXISTS upload_chunk_counted ON upload_chunks');
    await db.raw('DROP FUNCTION IF EXISTS upload_chunk_counted()');
  } else {
    await db.raw('DROP TRIGGER IF EXISTS upload_chunk_counted');
  }
  await db.schema.alterTable('upload_chunks', (t) => {
    t.dropColumn('recorded_at');
  });
}
