import type { Db } from '../db/knex.ts';

// Leases: a named row of the `leases` table that one process of an install holds at a time,
// until a time it renews while it works (the sweeper's, the mail worker's). A row, not
// PostgreSQL's advisory lock: it works alike on both databases and holds no connection.

/**
 * Takes (or renews) the lease `name` for `holder` until `now + ms`, in one conditional statement
 * that works alike on SQLite and PostgreSQL: the row is written when there is none, when it is
 * the holder's own, or when its time has passed; otherwise nothing is written and nothing
 * returned. Both databases run the upsert atomically, so of processes trying at once one gets it.
 */
export async function takeLease(db: Db, name: string, holder: string, now: number, ms: number): Promise<boolean> {
  const rows: unknown[] = await db('leases')
    .insert({ name, holder, held_until: now + ms })
    .onConflict('name')
    .merge(['holder', 'held_until'])
    .where((q) => q.where('leases.holder', holder).orWhere('leases.held_until', '<=', now))
    .returning('holder');
  return rows.length === 1;
}

/** Lets go of the lease if `holder` has it, so another process takes it at its next sweep. */
export async function releaseLease(db: Db, name: string, holder: string): Promise<void> {
  await db('leases').where({ name, holder }).delete();
}
