import type { Knex } from 'knex';
import { isPostgres } from '../postgres.ts';

/**
 * A refresh token's rotation stores the access token it gives in its own statement: the
 * successor's row carries the access token's hash, scopes and expiry, and a trigger on
 * `oidc_refresh_tokens` inserts the access token from them into `oidc_tokens` (its grant the
 * successor, its family, client, person, `tokenVersion`, `sid` and creation time the
 * successor's), in the same statement that marks the used token (`RefreshRepository.rotate`).
 *
 * Before, the access token was a statement of its own, sent first so that a process stopping in
 * between left the used token live and the new ones unknown; a round trip of its own on the
 * chain every rotation waits for. One statement and its trigger are atomic: the access token
 * exists exactly when the successor does, whether the mark held or not (a rotation refused
 * revokes the family, both included). Rows stored without an access token (a family's first
 * token, issued with its code's) fire nothing. The columns keep the access token's hash, as
 * `oidc_tokens` does, never the token.
 *
 * On both databases the trigger fires only for rows inserted, never for the used token's own row
 * met by the upsert's conflict. A later migration that makes Knex rebuild `oidc_refresh_tokens`
 * on SQLite (which copies a table without its triggers) must create it again:
 * `test/db/migrations.test.ts` checks it exists. One that rebuilds `oidc_tokens`, which the
 * trigger names, must drop the trigger first (SQLite refuses to rename a table into place while
 * a trigger names it) and create it after.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('oidc_refresh_tokens', (t) => {
    t.string('access_token_hash', 64).nullable();
    t.text('access_scopes').nullable();
    t.bigInteger('access_expires_at').nullable();
  });
  const insert = `
    INSERT INTO oidc_tokens (token_hash, code_hash, client_id, profile_id, scopes, token_version, created_at, expires_at, family_id, sid)
    VALUES (NEW.access_token_hash, NEW.token_hash, NEW.client_id, NEW.profile_id, NEW.access_scopes, NEW.token_version, NEW.created_at, NEW.access_expires_at, NEW.family_id, NEW.sid);`;
  if (isPostgres(db)) {
    await db.raw(`
      CREATE FUNCTION oidc_refresh_access_token() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        ${insert}
        RETURN NULL;
      END
      $$`);
    await db.raw(`
      CREATE TRIGGER oidc_refresh_access_token AFTER INSERT ON oidc_refresh_tokens
      FOR EACH ROW WHEN (NEW.access_token_hash IS NOT NULL)
      EXECUTE FUNCTION oidc_refresh_access_token()`);
  } else {
    await db.raw(`
      CREATE TRIGGER oidc_refresh_access_token AFTER INSERT ON oidc_refresh_tokens
      FOR EACH ROW WHEN NEW.access_token_hash IS NOT NULL
      BEGIN
        ${insert}
      END`);
  }
}

export async function down(db: Knex): Promise<void> {
  if (isPostgres(db)) {
    await db.raw('DROP TRIGGER IF EXISTS oidc_refresh_access_token ON oidc_refresh_tokens');
    await db.raw('DROP FUNCTION IF EXISTS oidc_refresh_access_token()');
  } else {
    await db.raw('DROP TRIGGER IF EXISTS oidc_refresh_access_token');
  }
  await db.schema.alterTable('oidc_refresh_tokens', (t) => {
    t.dropColumn('access_token_hash');
    t.dropColumn('access_scopes');
    t.dropColumn('access_expires_at');
  });
}
