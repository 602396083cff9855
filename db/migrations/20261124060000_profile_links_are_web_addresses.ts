import type { Knex } from 'knex';

/**
 * A profile's links (homepage, DBLP, Google Scholar, …) are web addresses from now on
 * (`isWebLink` in `shared/schemas/profile.ts`): a `javascript:` homepage was stored as sent and
 * shown to everyone, a stored XSS for any frontend that links it. Links stored before, with
 * another scheme, are removed here, so that reading those profiles keeps matching their schema.
 * The rule is copied, not imported: a migration does what it did on the day it was written.
 */
const LINK_FIELDS = ['homepage', 'dblp', 'gscholar', 'wikipedia', 'linkedin', 'semanticScholar', 'aclanthology', 'orcid'];
const BATCH = 500;

function isWebLink(value: unknown): boolean {
  if (typeof value !== 'string') return true;
  const compact = value.replace(/[\u0000-\u0020\u007f]/g, '');
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(compact)?.[1]?.toLowerCase();
  return scheme === undefined || scheme === 'http' || scheme === 'https';
}

export async function up(db: Knex): Promise<void> {
  let after = '';
  for (;;) {
    const rows: Array<{ id: string; content: unknown }> = await db('profiles').select('id', 'content').where('id', '>', after).orderBy('id').limit(BATCH);
    if (rows.length === 0) return;
    for (const row of rows) {
      const content = (typeof row.content === 'string' ? JSON.parse(row.content) : row.content) as Record<string, unknown> | null;
      if (!content || typeof content !== 'object') continue;
      const unsafe = LINK_FIELDS.filter((field) => !isWebLink(content[field]));
      if (unsafe.length === 0) continue;
      for (const field of unsafe) delete content[field];
      await db('profiles').where({ id: row.id }).update({ content: JSON.stringify(content) });
    }
    after = rows[rows.length - 1]!.id;
  }
}

/** The removed links are not kept anywhere: nothing to put back. */
export async function down(): Promise<void> {}
