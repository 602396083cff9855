import type { Knex } from 'knex';
import { SEED_INSTITUTIONS } from '../seeds/institutions.ts';

/**
 * What the account lifecycle needs beyond sign-in: the institution list activation matches
 * emails against, the audit trail of moderation and impersonation, the duplicate profile a
 * merge token points at, impersonation sessions, and the rate limiter's counters.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('institutions', (t) => {
    t.string('domain', 254).primary();
    t.string('name', 300).notNullable();
    t.string('country', 100).nullable();
  });
  await db.batchInsert('institutions', SEED_INSTITUTIONS.map(([domain, name, country]) => ({ domain, name, country })), 50);

  await db.schema.createTable('audit_log', (t) => {
    t.increments('id');
    t.bigInteger('at').notNullable();
    t.string('actor', 300).notNullable();
    t.string('action', 40).notNullable();
    t.string('target', 300).notNullable();
    t.text('reason').nullable();
    t.text('details').nullable();
    t.index(['target']);
    t.index(['actor']);
  });

  await db.schema.alterTable('account_tokens', (t) => {
    t.string('duplicate_profile', 300).nullable();
  });

  await db.schema.alterTable('sessions', (t) => {
    // Set on an impersonation session: the chain of who is acting (JSON, the spec's Impersonator).
    t.text('impersonator').nullable();
    t.string('parent_session_id', 64).nullable();
    t.boolean('read_only').notNullable().defaultTo(false);
  });

  // The counters of rate-limiter-flexible, in its own table layout.
  await db.schema.createTable('rate_limits', (t) => {
    t.string('key', 400).primary();
    t.integer('points').notNullable().defaultTo(0);
    t.bigInteger('expire').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('rate_limits');
  await db.schema.alterTable('sessions', (t) => {
    t.dropColumn('read_only');
    t.dropColumn('parent_session_id');
    t.dropColumn('impersonator');
  });
  await db.schema.alterTable('account_tokens', (t) => {
    t.dropColumn('duplicate_profile');
  });
  await db.schema.dropTable('audit_log');
  await db.schema.dropTable('institutions');
}
