import { createHash, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { PID_SPACE, pidIsGone } from '../leases.ts';

/**
 * This machine since its boot, and the pids this process sees there (`PID_SPACE`), as a short
 * tag: temporary files and leases say where the pid of their writer means something. Two
 * containers that share a host name (host networking) have tags of their own, so neither takes
 * the other's pid 1 for its own earlier start, nor a pid it cannot see for a stopped process.
 */
function machineTag(host: string, pidSpace: string): string {
  return createHash('sha1').update(`${host}\n${pidSpace}`).digest('hex').slice(0, 8);
}

const HOST = machineTag(hostname(), PID_SPACE);

/**
 * Who writes a temporary file, or holds an assembly: this process, since this start, on this
 * machine. `<pid>.<random>.<host>`: the pid says which process to ask about, the random part
 * tells this start from an earlier one with the same pid in the same pid namespace, the host tag
 * which machine's processes, since its boot and in which pid namespace, the pid is among
 * (`machineTag`; a restarted container has a new namespace, so its predecessor's work waits for
 * its lease).
 *
 * For an assembly this is only a shortcut: the rule that works whichever machines the processes
 * run on is the lease in the upload's row (chunked-uploads.ts), which runs out unless its holder renews
 * it. A holder of this machine whose process has stopped needs not be waited for until then.
 */
export const PROCESS_OWNER = `${process.pid}.${randomUUID()}.${HOST}`;

/** The owner ids this process made: never gone while it runs. */
const ours = new Set([PROCESS_OWNER]);

/** A further owner id of this process: one per uploads service, so that two services in one process are two lease holders. */
export function newOwner(): string {
  const owner = `${process.pid}.${randomUUID()}.${HOST}`;
  ours.add(owner);
  return owner;
}

const OWNER = /^(\d{1,10})\.[0-9a-f-]{36}(?:\.([0-9a-f]{8}))?$/;

/**
 * Whether the process that recorded `owner` has stopped: not one of this start of this process, on
 * this machine, and either this process's pid (an earlier start) or no process with that pid is
 * running. Another machine's processes, or another pid namespace's, cannot be asked: theirs is
 * never gone from here (their leases run out; the sweep removes such files once a day old), and
 * nor is anything recorded before this machine's last boot. An owner without a host tag was written before
 * tags were, by a process of the machine that shared the folder then.
 */
export function ownerIsGone(owner: string | null): boolean {
  if (owner !== null && ours.has(owner)) return false;
  const match = owner ? OWNER.exec(owner) : null;
  // Unreadable, or written before owners were recorded: nobody can be waiting for it.
  if (!match) return true;
  if (match[2] !== undefined && match[2] !== HOST) return false;
  const pid = Number(match[1]);
  if (pid === process.pid) return true;
  return pidIsGone(pid);
}
