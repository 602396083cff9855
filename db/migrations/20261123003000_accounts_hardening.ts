import type { Knex } from 'knex';

/**
 * What issue 12's account hardening needs: the refresh tokens a session has rotated out (so a
 * replay of one is recognised as reuse and ends the session, RFC 9700 §4.14.2), and the tilde
 * usernames a sign-up with an address already in use reserves (so the next number does not
 * tell whether the address was taken).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('session_refresh_history', (t) => {
    // SHA-256 of a rotated-out refresh token.
    t.string('refresh_hash', 64).primary();
    t.string('session_id', 64).notNullable().references('id').inTable('sessions').onDelete('CASCADE');
    // The hash that replaced it: a replay of the token just before the current one, within a
    // few seconds, is a browser's second simultaneous refresh, not a theft.
    t.string('next_hash', 64).notNullable();
    t.bigInteger('rotated_at').notNullable();
    t.index(['session_id']);
  });

  await db.schema.createTable('reserved_usernames', (t) => {
    t.string('username', 300).primary();
    t.string('base', 300).notNullable();
    t.integer('number').notNullable();
    t.bigInteger('created_at').notNullable();
    t.index(['base']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('reserved_usernames');
  await db.schema.dropTable('session_refresh_history');
}
