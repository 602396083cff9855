import { randomUUID } from 'node:crypto';

/**
 * Who is doing a piece of upload work that outlives a request's own memory (an assembly, a
 * temporary file): this process, since this start. `<pid>.<random>`: the pid says which process
 * to ask about, the random part tells this start from an earlier one with the same pid (a
 * restarted container is pid 1 every time).
 */
export const PROCESS_OWNER = `${process.pid}.${randomUUID()}`;

const OWNER = /^(\d{1,10})\.[0-9a-f-]{36}$/;

/**
 * Whether the process that recorded `owner` has stopped: not this start of this process, and
 * either this process's pid (an earlier start) or no process with that pid is running. Processes
 * that share a data folder are on one machine (the folder's SQLite file needs it anyway).
 */
export function ownerIsGone(owner: string | null): boolean {
  if (owner === PROCESS_OWNER) return false;
  const pid = owner ? OWNER.exec(owner)?.[1] : undefined;
  // Written before owners were recorded, or not ours to read: nobody can be waiting for it.
  if (!pid) return true;
  if (Number(pid) === process.pid) return true;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (error) {
    // EPERM: a process runs under that pid, only not ours to signal.
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
