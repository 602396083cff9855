import type { Knex } from 'knex';
import { isPostgres } from '../postgres.ts';

/**
 * A session's refresh token rotated out is recorded by the database itself, in the same
 * statement that rotates it: a trigger on `sessions` inserts the old hash, the session, the hash
 * that replaced it and the rotation's time (the session's new `last_seen_at`, which every
 * rotation sets: `SessionsRepository.rotateRefresh`) into `session_refresh_history`.
 *
 * Before, a rotation was a transaction of six round trips (`BEGIN IMMEDIATE`, the hash read, the
 * update, the history's old rows deleted, the insert, `COMMIT`), and on SQLite's one connection
 * every other request waited behind it. One statement and its trigger are just as atomic: the
 * history row exists exactly when the rotation does, a crash keeps both or neither, and of two
 * requests rotating the same token one updates the row and the other finds nothing to update.
 * The history's rows past keeping are now let go by the sweeper (`SessionService.sweep`), through
 * the index on `rotated_at` this adds, instead of by every rotation.
 *
 * On both databases only a conflict on the hash is ignored; anything else (a rotation that does
 * not set `last_seen_at`, leaving it null) fails the rotation. A later migration that makes Knex
 * rebuild `sessions` on SQLite (dropping or altering a column copies the table and its indexes,
 * not its triggers) must create the trigger again: `test/db/migrations.test.ts` checks it exists.
 * One that rebuilds `session_refresh_history`, which the trigger names, must drop the trigger
 * first (SQLite refuses to rename a table into place while a trigger names it) and create it after.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('session_refresh_history', (t) => {
    t.index(['rotated_at'], 'session_refresh_history_rotated_at');
  });
  if (isPostgres(db)) {
    await db.raw(`
      CREATE FUNCTION session_refresh_rotated() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO session_refresh_history (refresh_hash, session_id, next_hash, rotated_at)
        VALUES (OLD.refresh_hash, OLD.id, NEW.refresh_hash, NEW.last_seen_at)
        ON CONFLICT (refresh_hash) DO NOTHING;
        RETURN NULL;
      END
      $$`);
    await db.raw(`
      CREATE TRIGGER session_refresh_rotated AFTER UPDATE OF refresh_hash ON sessions
      FOR EACH ROW WHEN (OLD.refresh_hash IS DISTINCT FROM NEW.refresh_hash)
      EXECUTE FUNCTION session_refresh_rotated()`);
  } else {
    await db.raw(`
      CREATE TRIGGER session_refresh_rotated AFTER UPDATE OF refresh_hash ON sessions
      FOR EACH ROW WHEN OLD.refresh_hash IS NOT NEW.refresh_hash
      BEGIN
        INSERT INTO session_refresh_history (refresh_hash, session_id, next_hash, rotated_at)
        VALUES (OLD.refresh_hash, OLD.id, NEW.refresh_hash, NEW.last_seen_at)
        ON CONFLICT (refresh_hash) DO NOTHING;
      END`);
  }
}

export async function down(db: Knex): Promise<void> {
  if (isPostgres(db)) {
    await db.raw('DROP TRIGGER IF EXISTS session_refresh_rotated ON sessions');
    await db.raw('DROP FUNCTION IF EXISTS session_refresh_rotated()');
  } else {
    await db.raw('DROP TRIGGER IF EXISTS session_refresh_rotated');
  }
  await db.schema.alterTable('session_refresh_history', (t) => {
    t.dropIndex(['rotated_at'], 'session_refresh_history_rotated_at');
  });
}
