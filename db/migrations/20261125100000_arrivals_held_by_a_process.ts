import type { Knex } from 'knex';

/**
 * A chunk request under way (`upload_arrivals`) belongs to the process serving it: `holder` names
 * that process (as assemblies' `assembly_owner` does) and `held_until` is its lease, renewed while
 * the request runs. A process killed mid-request left its arrivals behind, and every other chunk
 * of the upload waited a minute for them; now they are ignored once their holder is known to be
 * gone (at once on its own machine) or their lease runs out. Arrivals from before are dropped:
 * they are requests of processes that stopped for this migration.
 */
export async function up(db: Knex): Promise<void> {
  await db('upload_arrivals').delete();
  await db.schema.alterTable('upload_arrivals', (t) => {
    t.text('holder').notNullable().defaultTo('');
    t.bigInteger('held_until').notNullable().defaultTo(0);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('upload_arrivals', (t) => {
    t.dropColumn('holder');
    t.dropColumn('held_until');
  });
}
