/**
 * The failure (review of stop 57): the owner tag of temporary files and upload leases was a hash
 * of the host name alone. Two containers with host networking share that name, and a kernel, but
 * not their pids: each is pid 1 of its own namespace. Either took the other's live lease for its
 * own earlier start (the same pid), or found the other's pid missing from its own namespace, and
 * took over a tus upload or an assembly the other was still working on. The tag now names the
 * boot and the pid namespace too (`PID_SPACE`): another namespace's processes are never judged
 * stopped by their pid, and their leases are waited out.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { ownerIsGone, PROCESS_OWNER } from '../../server/attachments/owners.ts';

/** Prints the `PROCESS_OWNER` of the process that runs it. */
const OWNER_SCRIPT = `import(${JSON.stringify(new URL('../../server/attachments/owners.ts', import.meta.url).href)}).then((m) => console.log(m.PROCESS_OWNER))`;
/** Whether this test may start a process in a pid namespace of its own (root, or user namespaces allowed). */
const canUnshare = spawnSync('unshare', ['-r', '--pid', '--fork', 'true']).status === 0;
const tagOf = (owner: string) => owner.split('.')[2];

it.skipIf(!canUnshare)('a process of another pid namespace under this host name is never judged stopped by its pid', () => {
  const inOwnSpace = spawnSync('unshare', ['-r', '--pid', '--fork', process.execPath, '-e', OWNER_SCRIPT], { encoding: 'utf8' });
  expect(inOwnSpace.status, inOwnSpace.stderr).toBe(0);
  const theirs = inOwnSpace.stdout.trim();
  expect(theirs.split('.')[0]).toBe('1');
  expect(tagOf(theirs)).not.toBe(tagOf(PROCESS_OWNER));
  // Its pid 1, which here would be this process's own earlier start, and a pid this process cannot see.
  expect(ownerIsGone(`${process.pid}.${randomUUID()}.${tagOf(theirs)}`)).toBe(false);
  expect(ownerIsGone(`2147483646.${randomUUID()}.${tagOf(theirs)}`)).toBe(false);
});

it('a process beside this one, in the same namespace, has its tag, and is judged by its pid', () => {
  const beside = spawnSync(process.execPath, ['-e', OWNER_SCRIPT], { encoding: 'utf8' });
  const theirs = beside.stdout.trim();
  expect(tagOf(theirs)).toBe(tagOf(PROCESS_OWNER));
  // It has ended, and this machine's pids say so.
  expect(ownerIsGone(theirs)).toBe(true);
});
