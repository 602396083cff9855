/**
 * The timing shared by everything one process leases or waits for on behalf of others: a chunk
 * request under way (arrivals.ts) and an assembly (chunked-uploads.ts). Shared, so that both leases are
 * renewed alike and a chunk waits for another process the same way whatever it waits for.
 */

/**
 * How long a chunk waits, in real time, for the other chunk requests of its upload or for
 * another process's assembly of it, checking on them in the database.
 */
export const WAIT_FOR_OTHER_PROCESS_MS = 60_000;
export const OTHER_PROCESS_POLL_MS = 50;

/** How often a lease held by a running request or assembly is renewed (each lasts 15 s: `ASSEMBLY_LEASE_MS`, `ARRIVAL_LEASE_MS`). */
export const LEASE_RENEW_MS = 3_000;

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
