import { hostname } from 'node:os';
import type { Db } from '../db/knex.ts';
import { KERNEL, machineTag, PID_SPACE, processId, processIsGone } from './processes.ts';

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

/**
 * A lease holder's name for this process: "host pid pid-space id", so that a successor on this
 * kernel can tell it has stopped (`stoppedOnThisKernel`); each call a new id (two holders of one
 * process, as tests run several services, are two).
 */
export function processHolder(): string {
  return `${hostname()} ${process.pid} ${PID_SPACE || '-'} ${processId()}`;
}

/**
 * Whether `holder` (a `processHolder` name) is a process of this kernel that is gone
 * (`processIsGone`: by its pid in this pid space, by its mark in another). This start of this
 * process is not; an earlier start with its pid is (a restarted container's server, pid 1 again).
 */
function stoppedOnThisKernel(holder: string): boolean {
  const [host = '', pidText, space = '-', id = ''] = holder.split(' ');
  const pid = Number(pidText);
  // A pid space is "<boot id>/<namespace>": another kernel's (or boot's) processes are not asked.
  if (!PID_SPACE || !space.startsWith(`${KERNEL}/`) || !Number.isInteger(pid) || pid <= 0) return false;
  return processIsGone(machineTag(host, space), pid, id);
}

/**
 * `takeLease`, or, when the lease is held by a process of this kernel that has stopped, the lease
 * taken over from it at once rather than when its time runs out. `fromStopped`: it was taken over
 * so (its holder's work may be half done).
 */
export async function takeLeaseFromStopped(db: Db, name: string, holder: string, now: number, ms: number): Promise<{ taken: boolean; fromStopped: boolean }> {
  const held = (await db('leases').where({ name }).first()) as { holder: string } | undefined;
  const fromStopped = held !== undefined && held.holder !== holder && stoppedOnThisKernel(held.holder);
  let taken = await takeLease(db, name, holder, now, ms);
  if (!taken && held && fromStopped) {
    taken = (await db('leases').where({ name, holder: held.holder }).update({ holder, held_until: now + ms })) === 1;
  }
  return { taken, fromStopped: taken && fromStopped };
}
