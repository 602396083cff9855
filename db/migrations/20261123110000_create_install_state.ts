import type { Knex } from 'knex';

/**
 * What every process of an install must agree on, kept where they all read it (issue 15):
 * `install_secrets`, the secrets an install generates for itself (the session-token secret when
 * `SESSION_SECRET` is unset), written once and whole by the first process to start; and
 * `leases`, a named job (the sweeper) and which process holds it until when, so that one
 * process at a time runs it.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('install_secrets', (t) => {
    t.text('name').primary();
    t.text('value').notNullable();
    t.bigInteger('created_at').notNullable();
  });
  await db.schema.createTable('leases', (t) => {
    t.text('name').primary();
    // A process's own random id (not its pid: processes on other machines share the table).
    t.text('holder').notNullable();
    // Milliseconds since 1970; past it, any process may take the lease.
    t.bigInteger('held_until').notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('leases');
  await db.schema.dropTable('install_secrets');
}
