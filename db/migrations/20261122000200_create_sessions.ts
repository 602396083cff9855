import type { Knex } from 'knex';

/** Sessions are rows, so logging out ends a token before it expires. */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('sessions', (t) => {
    t.string('id', 64).primary();
    t.string('profile_id', 300).notNullable().references('id').inTable('profiles').onDelete('CASCADE');
    t.string('login_email', 254).notNullable();
    // SHA-256 of the refresh token; the token itself is only ever in the user's cookie.
    t.string('refresh_hash', 64).notNullable().unique();
    t.integer('token_version').notNullable();
    t.integer('access_seconds').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('revoked_at').nullable();
    t.index(['profile_id']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('sessions');
}
