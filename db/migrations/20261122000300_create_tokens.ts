import type { Knex } from 'knex';

/** One-time tokens (activation, email confirmation, password reset), stored only as hashes. */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('account_tokens', (t) => {
    t.increments('id');
    t.string('kind', 30).notNullable();
    t.string('token_hash', 64).notNullable().unique();
    t.string('code_hash', 64).nullable();
    t.string('profile_id', 300).notNullable().references('id').inTable('profiles').onDelete('CASCADE');
    t.string('email', 254).nullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.bigInteger('used_at').nullable();
    t.index(['profile_id', 'kind']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('account_tokens');
}
