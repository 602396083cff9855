import type { Knex } from 'knex';

/**
 * A username's base as searches compare it: `base_key`, the base in Unicode's normal form (NFC),
 * lower-cased by JavaScript's rules, which know every script. SQLite's `lower()` and its `LIKE`
 * fold ASCII letters only, and PostgreSQL's `lower()` folds by the cluster's locale, so
 * "élodie dupont" (the web client's author search lower-cases what is typed) found no
 * "Élodie Dupont" on SQLite, and on PostgreSQL depending on how the cluster was made.
 *
 * Written with each username (`EmailsRepository.addUsername`). Rows written by a process not yet
 * on this version (several processes share a database during an upgrade) have none, and are
 * matched by `lower(base)` as before.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('profile_usernames', (t) => {
    t.text('base_key').nullable();
  });
  // One statement for every base SQL folds right (ASCII ones, nearly all), then one per base
  // whose key JavaScript's rule gives otherwise (`searchKey`, written out here: a migration does
  // not change with the code).
  await db('profile_usernames').update({ base_key: db.raw('lower(base)') });
  const rows = (await db('profile_usernames').select('username', 'base', 'base_key')) as Array<{ username: string; base: string; base_key: string }>;
  for (const { username, base, base_key: folded } of rows) {
    const key = base.normalize('NFC').toLowerCase();
    if (key !== folded) await db('profile_usernames').where({ username }).update({ base_key: key });
  }
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('profile_usernames', (t) => {
    t.dropColumn('base_key');
  });
}
