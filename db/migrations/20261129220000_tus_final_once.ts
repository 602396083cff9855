import { hash } from 'node:crypto';
import type { Knex } from 'knex';

/**
 * One final upload (tus concatenation) per person and list of parts: the client's POST sent
 * again answers the same final upload (`server/attachments/tus.ts`), and so do POSTs sent at
 * once, which a look-then-insert let write one row each (each counted against the hourly
 * allowance). The parts are named by `concat_key`, the SHA-256 of their ids in order (the same
 * parts written as absolute URLs or as paths are one final upload, and a key of fixed length
 * fits PostgreSQL's index, where an `Upload-Concat` of many parts does not). Rows written twice
 * before are folded first: the one holding its file stays, or else the first written.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('tus_uploads', (t) => {
    t.text('concat_key').nullable();
  });
  const rows = (await db('tus_uploads')
    .where({ concat: 'final' })
    .orderBy([{ column: 'created_at' }, { column: 'id' }])
    .select('id', 'profile_id', 'concat_header', 'url')) as Array<{ id: string; profile_id: string; concat_header: string | null; url: string | null }>;
  const kept = new Map<string, { id: string; url: string | null }>();
  for (const row of rows) {
    // As `finalKey` (server/attachments/tus-requests.ts) reads the header, written out here: a
    // migration does not change with the code.
    const ids = (row.concat_header ?? '').replace(/^final;/, '').trim().split(/\s+/).map((url) => /([0-9a-f-]{36})\/?$/.exec(url)?.[1] ?? '');
    const key = hash('sha256', ids.join(' '));
    await db('tus_uploads').where({ id: row.id }).update({ concat_key: key });
    const first = kept.get(`${row.profile_id} ${key}`);
    if (!first) {
      kept.set(`${row.profile_id} ${key}`, row);
      continue;
    }
    const stays = !first.url && row.url ? row : first;
    await db('tus_uploads').where({ id: stays === row ? first.id : row.id }).delete();
    kept.set(`${row.profile_id} ${key}`, stays);
  }
  await db.raw("CREATE UNIQUE INDEX tus_uploads_final_once ON tus_uploads (profile_id, concat_key) WHERE concat = 'final'");
}

export async function down(db: Knex): Promise<void> {
  await db.raw('DROP INDEX tus_uploads_final_once');
  await db.schema.alterTable('tus_uploads', (t) => {
    t.dropColumn('concat_key');
  });
}
