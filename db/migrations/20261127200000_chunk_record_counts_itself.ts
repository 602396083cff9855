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
 * records nothing. On SQLite, whose write statements take the write lock before they read, that
 * is the whole record; on PostgreSQL the statement runs after the upload's row is locked, in a
 * transaction, so chunks arriving together on several connections are counted one after the other.
 *
 * Only rows with a `recorded_at` are counted: the code before this inserts none and counts its
 * chunks itself, so a process not yet restarted on this version (several processes share a
 * database during an upgrade) does not count its chunks twice. A chunk sent again (already
 * recorded) inserts nothing, so it no longer moves `updated_at` on; its upload was moved on
 * when the chunk was first recorded.
 *
 * Tables a later migration changes through Knex on SQLite are rebuilt (copied, dropped and
 * renamed), which loses the triggers on them and fails while another table's trigger names
 * them: a migration that rebuilds `upload_chunks` must create this trigger again, and one that
 * rebuilds `chunked_uploads` must drop it first and create it again after.
 * `test/db/migrations.test.ts` checks it exists.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('upload_chunks', (t) => {
    t.bigInteger('recorded_at').nullable();
  });
  const count = `
    UPDATE chunked_uploads
    SET received_bytes = received_bytes + NEW.size,
        updated_at = CASE WHEN status = 'receiving' THEN NEW.recorded_at ELSE updated_at END
    WHERE id = NEW.upload_id;`;
  if (isPostgres(db)) {
    await db.raw(`
      CREATE FUNCTION upload_chunk_counted() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        ${count}
        RETURN NULL;
      END
      $$`);
    await db.raw('CREATE TRIGGER upload_chunk_counted AFTER INSERT ON upload_chunks FOR EACH ROW WHEN (NEW.recorded_at IS NOT NULL) EXECUTE FUNCTION upload_chunk_counted()');
  } else {
    await db.raw(`
      CREATE TRIGGER upload_chunk_counted AFTER INSERT ON upload_chunks
      FOR EACH ROW WHEN NEW.recorded_at IS NOT NULL
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
