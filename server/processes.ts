import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { chownSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, renameSync, rmSync, statfsSync, statSync, utimesSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';

// Which processes of the install still run, for the work they held (a tus upload, an assembly,
// the mail lease, a temporary file) to be taken over at once when they have stopped rather than
// when their lease runs out. A pid says so only among the processes that share a pid namespace;
// a process of another namespace on this kernel (a container beside this one, this container's
// previous start) is asked through its mark: a file that its process holds a lock on, which the
// kernel lets go of when the process ends, however it ends.

/** This kernel since its boot: the same in every container of the host, a new one at each boot. Empty where /proc is not. */
export const KERNEL = (() => {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return '';
  }
})();

/**
 * Which pids this process can see: the kernel's boot and the pid namespace. A pid names the same
 * process only within one such space: another container on this host, even one that shares its
 * host name (host networking), has pids of its own, often the very numbers (pid 1), and they
 * cannot be asked about from here. Empty where /proc is not (no pid namespaces there).
 */
export const PID_SPACE = (() => {
  try {
    return KERNEL ? `${KERNEL}/${readlinkSync('/proc/self/ns/pid')}` : '';
  } catch {
    return '';
  }
})();

/**
 * A host name and a pid space (`PID_SPACE`) as a short tag: where a pid means something. Two
 * containers that share a host name (host networking) have tags of their own, so neither takes
 * the other's pid 1 for its own earlier start, nor a pid it cannot see for a stopped process.
 */
export function machineTag(host: string, pidSpace: string): string {
  return createHash('sha1').update(`${host}\n${pidSpace}`).digest('hex').slice(0, 8);
}

/** This process's tag. */
export const MACHINE = machineTag(hostname(), PID_SPACE);

/**
 * This start of this process, never the same for two: 16 hex digits. A host name, a pid namespace
 * (whose number the kernel gives again once it is free) and a pid (a container's server is pid 1)
 * name a running process, but not one over time; its mark is named by its start too.
 */
const START = randomBytes(8).toString('hex');

/**
 * An id in the shape of a UUID for what this process holds (a temporary file's or a lease's
 * owner): this start (`START`, its first 18 characters) and 62 random bits (the UUID's own, less
 * its variant). Owners keep the shape
 * they always had, which every version reads.
 */
export function processId(): string {
  const own = randomUUID();
  return `${START.slice(0, 8)}-${START.slice(8, 12)}-${START.slice(12, 16)}${own.slice(18)}`;
}

/** The start an id of `processId` names (an id from before starts were recorded names one no mark has). */
function startOf(id: string): string {
  return id.slice(0, 18).replaceAll('-', '');
}

/** Whether `id` (of `processId`) was made by this start of this process: what it names is never gone while it runs. */
export function isThisStart(id: string): boolean {
  return startOf(id) === START;
}

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

/**
 * Whether the process `pid` of the machine `tag` (`machineTag`) that made `id` (`processId`) has
 * stopped, as far as this process can tell: by its pid in this pid space, by its mark in another
 * of this kernel's. A process of another kernel (another host, or this one before its last
 * boot), or one that left no mark where this process looks, is never judged stopped: its leases
 * run out instead.
 */
export function processIsGone(tag: string, pid: number, id: string): boolean {
  if (isThisStart(id)) return false;
  // This pid in this pid space, of another start: the process that had it before (a restarted container's pid 1).
  if (tag === MACHINE) return pid === process.pid || pidIsGone(pid);
  for (const folder of marks.keys()) {
    const held = markIsHeld(path.join(folder, markName(tag, pid, startOf(id))));
    if (held !== undefined) return !held;
  }
  return false;
}

// Marks: `$DATA_DIR/processes/<boot id>/<tag>.<pid>.<start>`, one per process that shares the
// data folder, an empty SQLite file on which its process keeps an exclusive lock (POSIX record locks,
// which SQLite takes; Node has no other way to lock a file). The lock ends with the process; the
// file stays, as the proof that its process stopped, for as long as what it held may be asked
// about: its process touches it every hour, and a process starting on the folder removes those
// whose lock is free and that were not touched for two days (by then the daily sweep has removed
// their temporary files, and every lease of theirs has run out). Marks are kept by kernel (its
// boot id), and made only on file systems that keep locks in this kernel for every mount (not
// NFS, SMB or FUSE), so another kernel's folder is an earlier boot's: never asked, and removed
// by the next process to start.
// Nothing in this process but SQLite may open a mark: a POSIX lock ends when the process holding
// it closes any descriptor of the file, and SQLite keeps its own open while it holds a lock.
// Other processes (a backup, another server reading a mark) may open them freely.

const MARKS = 'processes';

/** A mark's file name. */
function markName(tag: string, pid: number, start: string): string {
  return `${tag}.${pid}.${start}`;
}

/**
 * File systems whose locks this kernel keeps, one lock for a file however many mounts (a
 * container's bind mount or volume) show it (`statfs`'s magic numbers, linux/magic.h): ext2-4,
 * XFS, Btrfs, tmpfs, overlayfs, ZFS, F2FS, bcachefs.
 */
const LOCAL_FILE_SYSTEMS = new Set([0xef53, 0x58465342, 0x9123683e, 0x01021994, 0x794c7630, 0x2fc12fc1, 0xf2f52010, 0xca451a4e]);

interface Mark {
  /** The connection that holds the lock. */
  readonly lock: DatabaseSync;
  readonly file: string;
  /** Touches the file every hour. */
  readonly touching: NodeJS.Timeout;
  /** The services of this process that work in the folder. */
  users: number;
}

/** This process's marks, by the folder they are in. */
const marks = new Map<string, Mark>();

/**
 * Marks this process in `dataDir` (once for every service that works there) and removes the
 * marks of processes that stopped long ago. Returns what lets go of it: the last user's call
 * removes the mark. Throws when the folder cannot be written, or is on a file system whose locks
 * it cannot trust (`LOCAL_FILE_SYSTEMS`); the process then has no mark, and the leases it leaves
 * when it stops are waited out by other pid spaces' processes.
 */
export function markThisProcess(dataDir: string): () => void {
  if (!KERNEL) return () => {};
  const made = path.join(dataDir, MARKS, KERNEL);
  giveToOwnerOf(dataDir, made, mkdirSync(made, { recursive: true }));
  // The folder the marks are in, wherever a link leads, is what must keep locks for every mount.
  const folder = realpathSync(made);
  const { type } = statfsSync(folder);
  if (!LOCAL_FILE_SYSTEMS.has(Number(type))) {
    throw new Error(`${folder} is on a file system (type 0x${Number(type).toString(16)}) whose locks other mounts of it may not see`);
  }
  let mark = marks.get(folder);
  if (!mark) {
    mark = holdMark(folder);
    marks.set(folder, mark);
    removeStoppedMarks(path.dirname(folder));
  }
  const held = mark;
  held.users += 1;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    held.users -= 1;
    if (held.users > 0) return;
    marks.delete(folder);
    // Removed while its lock is still held, so that nobody finds it free meanwhile.
    clearInterval(held.touching);
    try {
      rmSync(held.file, { force: true });
    } catch {
      // A folder made read-only meanwhile: the mark stays, its lock let go of below.
    }
    held.lock.close();
  };
}

/**
 * The folders a root process made (`first` down to `made`, inside `dataDir`) given to the data
 * folder's owner: the admin command run as root as the first process since a boot would otherwise
 * leave the boot's folder root's, and the server, run as its own user, unable to mark itself
 * there. A process that is not root cannot give files away, and needs not: what it makes is
 * already the owner's, or the owner's group's to share.
 */
function giveToOwnerOf(dataDir: string, made: string, first: string | undefined): void {
  if (first === undefined || process.getuid?.() !== 0) return;
  const { uid, gid } = statSync(dataDir);
  if (uid === 0) return;
  let folder = made;
  for (;;) {
    chownSync(folder, uid, gid);
    if (folder === first || path.dirname(folder) === folder) return;
    folder = path.dirname(folder);
  }
}

/**
 * Makes this process's mark in `folder`: locked under a name no one looks at, then renamed into
 * place, so that no one finds it free while its process runs.
 */
function holdMark(folder: string): Mark {
  const file = path.join(folder, markName(MACHINE, process.pid, START));
  const unnamed = path.join(folder, `.${randomUUID()}`);
  const lock = new DatabaseSync(unnamed);
  try {
    // No journal file beside the mark: the lock is taken by a transaction that writes nothing.
    lock.exec('PRAGMA journal_mode=MEMORY');
    lock.exec('BEGIN EXCLUSIVE');
    renameSync(unnamed, file);
  } catch (error) {
    lock.close();
    rmSync(unnamed, { force: true });
    throw error;
  }
  const touching = setInterval(() => {
    try {
      const now = new Date();
      utimesSync(file, now, now);
    } catch {
      // Removed by another process (a folder shared with a kernel that cannot see this lock).
    }
  }, TOUCH_MS);
  touching.unref();
  return { lock, file, touching, users: 0 };
}

const TOUCH_MS = 60 * 60_000;
/** A mark whose lock is free is removed once it has not been touched for this long. */
const STOPPED_KEPT_MS = 2 * 24 * 60 * 60_000;
/** A mark not yet in place is left alone this long: its process may be between making and naming it. */
const UNNAMED_GRACE_MS = 60_000;

/**
 * Removes the marks under `root` whose lock is free and that were not touched for
 * `STOPPED_KEPT_MS` (their processes stopped long ago), and the folders of earlier boots (never
 * asked: nothing of an earlier boot is judged by its marks). What cannot be removed (a file of
 * another user) stays, and this process's mark with it.
 */
function removeStoppedMarks(root: string): void {
  let kernels: string[];
  try {
    kernels = readdirSync(root);
  } catch {
    return;
  }
  for (const kernel of kernels) {
    const folder = path.join(root, kernel);
    if (kernel !== KERNEL) {
      try {
        rmSync(folder, { recursive: true, force: true });
      } catch {
        // Another user's: left for them.
      }
      continue;
    }
    let names: string[];
    try {
      names = readdirSync(folder);
    } catch {
      continue;
    }
    for (const name of names) {
      const file = path.join(folder, name);
      const touched = regularFile(file)?.mtimeMs ?? 0;
      if (touched > Date.now() - (name.startsWith('.') ? UNNAMED_GRACE_MS : STOPPED_KEPT_MS)) continue;
      if (markIsHeld(file) !== false) continue;
      try {
        rmSync(file, { force: true });
      } catch {
        // Another user's: left for them.
      }
    }
  }
}

/** `file`'s status if it is a regular file itself (not a link, a folder or a pipe, which opening would wait on). */
function regularFile(file: string) {
  try {
    const status = lstatSync(file);
    return status.isFile() ? status : undefined;
  } catch {
    return undefined;
  }
}

/** SQLite's "database is locked". */
const SQLITE_BUSY = 5;

/**
 * Whether a process holds the mark `file`: true, false (its lock is free), or undefined when
 * there is no such mark (or it cannot be read). Reading the file needs a shared lock, which the
 * holder's exclusive one refuses at once (no busy wait).
 */
function markIsHeld(file: string): boolean | undefined {
  if (!regularFile(file)) return undefined;
  let reader: DatabaseSync;
  try {
    reader = new DatabaseSync(file, { readOnly: true, timeout: 0 });
  } catch {
    return undefined;
  }
  try {
    reader.prepare('SELECT count(*) FROM sqlite_master').get();
    return false;
  } catch (error) {
    return (error as { errcode?: number }).errcode === SQLITE_BUSY ? true : undefined;
  } finally {
    reader.close();
  }
}
