/**
 * Processes of another pid space of this kernel (a container beside the test's, or its own
 * previous start), as the server knows them: by their mark,
 * `$DATA_DIR/processes/<boot id>/<tag>.<pid>.<start>`, a file whose lock their process holds while
 * it runs (`server/processes.ts`). `<start>` is the first 16 hex digits of the ids their process
 * gives what it holds (`processId`). A test plants the mark of such a process, running (a child
 * that holds the lock) or stopped (the file, its lock free).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** Where the mark of the process `pid` of the machine `tag` that made the id `id` is, for a server whose data folder is `dataDir`. */
export function markFile(dataDir: string, tag: string, pid: number, id: string): string {
  const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  return path.join(dataDir, 'processes', bootId, `${tag}.${pid}.${id.slice(0, 18).replaceAll('-', '')}`);
}

/** The mark of a process that has stopped: the file, its lock free. */
export function stoppedMark(dataDir: string, tag: string, pid: number, id: string): void {
  const file = markFile(dataDir, tag, pid, id);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, '');
}

/** Holds the lock of the file named by argv[1], as a running process holds its mark, until its input ends. */
const HOLDER = `
const { DatabaseSync } = require('node:sqlite');
const lock = new DatabaseSync(process.argv[1]);
lock.exec('PRAGMA journal_mode=MEMORY');
lock.exec('BEGIN EXCLUSIVE');
console.log('held');
process.stdin.on('end', () => process.exit(0)).resume();
`;

/** The mark of a running process, held by a child process until `stop`, which ends it (the kernel then lets go of its lock). */
export async function runningMark(dataDir: string, tag: string, pid: number, id: string): Promise<{ stop(): Promise<void> }> {
  stoppedMark(dataDir, tag, pid, id);
  const child = spawn(process.execPath, ['-e', HOLDER, markFile(dataDir, tag, pid, id)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the mark's holder exited (${code}) before it held the lock`)));
  });
  return {
    async stop() {
      child.stdin.end();
      await exited;
    },
  };
}
