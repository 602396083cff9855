import type { Knex } from 'knex';

/**
 * One final upload (tus concatenation) per person and `Upload-Concat`: the client's POST sent
 * again answers the same final upload (`server/attachments/tus.ts`), and so do POSTs sent at
 * once, which a look-then-insert let write one row each (each counted against the hourly
 * allowance). Rows written twice before are folded first: the one holding its file stays, or
 * else the first written.
 */
export async function up(db: Knex): Promise<void> {
  const rows = (await db('tus_uploads')
    .where({ concat: 'final' })
    .orderBy([{ column: 'created_at' }, { column: 'id' }])
    .select('id', 'profile_id', 'concat_header', 'url')) as Array<{ id: string; profile_id: string; concat_header: string | null; url: string | null }>;
  const kept = new Map<string, { id: string; url: string | null }>();
  for (const row of rows) {
    const key = JSON.stringify([row.profile_id, row.concat_header]);
    const first = kept.get(key);
    if (!first) {
      kept.set(key, row);
      continue;
    }
    const stays = !first.url && row.url ? row : first;
    await db('tus_uploads').where({ id: stays === row ? first.id : row.id }).delete();
    kept.set(key, stays);
  }
  await db.raw("CREATE UNIQUE INDEX tus_uploads_final_once ON tus_uploads (profile_id, concat_header) WHERE concat = 'final'");
}

export async function down(db: Knex): Promise<void> {
  await db.raw('DROP INDEX tus_uploads_final_once');
}
