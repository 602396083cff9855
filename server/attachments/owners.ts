import { MACHINE, processId, processIsGone } from '../processes.ts';

/**
 * Who writes a temporary file, or holds an assembly: this process, since this start, on this
 * machine. `<pid>.<id>.<host>`: the pid says which process to ask about, the id (`processId`)
 * tells this start from an earlier one with the same pid in the same pid namespace, the host tag
 * which machine's processes, since its boot and in which pid namespace, the pid is among
 * (`machineTag`, ../processes.ts).
 *
 * For an assembly this is only a shortcut: the rule that works whichever machines the processes
 * run on is the lease in the upload's row (chunked-uploads.ts), which runs out unless its holder renews
 * it. A holder that `ownerIsGone` finds stopped needs not be waited for until then.
 */
export const PROCESS_OWNER = `${process.pid}.${processId()}.${MACHINE}`;

/** A further owner id of this process: one per uploads service, so that two services in one process are two lease holders. */
export function newOwner(): string {
  return `${process.pid}.${processId()}.${MACHINE}`;
}

const OWNER = /^(\d{1,10})\.([0-9a-f-]{36})(?:\.([0-9a-f]{8}))?$/;

/**
 * Whether the process that recorded `owner` has stopped: not one of this start of this process,
 * and either this process's pid in its pid space (an earlier start) or a process that
 * `processIsGone` finds stopped: by its pid in this pid space, by its mark in another of this
 * kernel's (a restarted container's predecessor, a container beside this one). Another kernel's
 * processes, and anything recorded before this kernel's boot, are never gone from here: their
 * leases run out, and the sweep removes such files once a day old. An owner without a host tag
 * was written before tags were, by a process of the machine that shared the folder then.
 */
export function ownerIsGone(owner: string | null): boolean {
  const match = owner ? OWNER.exec(owner) : null;
  // Unreadable, or written before owners were recorded: nobody can be waiting for it.
  if (!match) return true;
  // This start's ids are never gone; this pid's of another start are (`processIsGone`).
  return processIsGone(match[3] ?? MACHINE, Number(match[1]), match[2] ?? '');
}
