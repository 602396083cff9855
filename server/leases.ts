import { readFileSync, readlinkSync } from 'node:fs';
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

/**
 * Which pids this process can see: the kernel's boot and the pid namespace. A pid names the same
 * process only within one such space: another container on this host, even one that shares its
 * host name (host networking), has pids of its own, often the very numbers (pid 1), and they
 * cannot be asked about from here. Empty where /proc is not (no pid namespaces there).
 */
export const PID_SPACE = (() => {
  try {
    return `${readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()}/${readlinkSync('/proc/self/ns/pid')}`;
  } catch {
    return '';
  }
})();

/**
 * Whether no process runs under `pid` on this machine (as this process sees its pids): none
 * answers a signal, or the one that does has exited and waits to be reaped (a zombie, state `Z`
 * in `/proc/<pid>/stat`), which a parent slow to collect it (a container's init) leaves for a while.
 */
export function pidIsGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: a process runs under that pid, only not ours to signal.
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    // Gone meanwhile, or no /proc: the signal's answer stands.
    return false;
  }
}
