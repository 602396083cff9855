import type { Knex } from 'knex';

/** Profiles, with their emails and usernames in tables of their own so both stay unique. */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('profiles', (t) => {
    t.string('id', 300).primary();
    t.string('state', 40).notNullable();
    t.string('password_hash', 300).nullable();
    t.integer('token_version').notNullable().defaultTo(0);
    t.text('content').notNullable();
    t.text('past_states').notNullable();
    t.bigInteger('tcdate').notNullable();
    t.bigInteger('tmdate').notNullable();
    t.bigInteger('ddate').nullable();
    t.bigInteger('terms_timestamp').nullable();
    t.bigInteger('dob_timestamp').nullable();
    t.bigInteger('last_login').nullable();
    t.string('merged_into', 300).nullable().references('id').inTable('profiles');
  });
  await db.schema.createTable('profile_emails', (t) => {
    // Stored lower-cased: one address belongs to one profile, however it is typed.
    t.string('email', 254).primary();
    t.string('profile_id', 300).notNullable().references('id').inTable('profiles').onDelete('CASCADE');
    t.boolean('confirmed').notNullable().defaultTo(false);
    t.bigInteger('created_at').notNullable();
    t.index(['profile_id']);
  });
  await db.schema.createTable('profile_usernames', (t) => {
    t.string('username', 300).primary();
    // `~Ada_Lovelace3` is stored as base `~Ada_Lovelace` and number 3, so finding the next free
    // number is an index lookup, not a scan.
    t.string('base', 300).notNullable();
    t.integer('number').notNullable();
    t.string('profile_id', 300).notNullable().references('id').inTable('profiles').onDelete('CASCADE');
    t.unique(['base', 'number']);
    t.index(['profile_id']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('profile_usernames');
  await db.schema.dropTable('profile_emails');
  await db.schema.dropTable('profiles');
}
