/**
 * A JSON column as stored: SQLite hands it back as text, PostgreSQL parsed. Repositories read
 * every JSON column through this, so they run on either.
 */
export function fromJson<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

/** A nullable number column as stored (PostgreSQL hands big integers back as text): null stays null. */
export function numberOrNull(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}
