/**
 * What Knex's `query` event says about a statement, for those that follow a database's writes
 * (`watchWrites` in `knex.ts`, `BackgroundCheckpoints` in `sqlite.ts`), on either database.
 */

/** A statement Knex sends through its `query` event: its SQL and the builder's method. */
export interface SentQuery {
  sql?: unknown;
  method?: unknown;
}

/** Whether a statement only reads: a builder's select, or raw SQL that begins with `SELECT`. */
export function readsOnly(query: SentQuery): boolean {
  if (query.method === 'select' || query.method === 'first' || query.method === 'pluck') return true;
  return typeof query.sql === 'string' && /^\s*select\b/i.test(query.sql);
}
