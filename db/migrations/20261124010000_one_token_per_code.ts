import type { Knex } from 'knex';

/**
 * An authorization code yields at most one access token, and the database now says so: the
 * token endpoint issues the token and uses the code up in one statement (an insert that a
 * second redemption of the same code conflicts with), instead of a transaction of four
 * (issue 16). The plain index on `code_hash` becomes a unique one.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('oidc_tokens', (t) => {
    t.dropIndex(['code_hash']);
    t.unique(['code_hash']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('oidc_tokens', (t) => {
    t.dropUnique(['code_hash']);
    t.index(['code_hash']);
  });
}
