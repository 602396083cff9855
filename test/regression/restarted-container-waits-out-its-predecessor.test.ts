/**
 * The failure (review of stop 58): owner tags name the pid namespace (so that containers beside
 * each other never judge each other's pids), and each start of a container has a new one. Its
 * predecessor, stopped, counted as another machine: the tus uploads and assemblies it held were
 * taken over only when their leases ran out (15–30 s, longer than tus-js-client retries), and its
 * temporary files waited for the daily sweep. A process now marks itself in the data folder
 * (`server/processes.ts`), with a lock the kernel lets go of when it stops: a process of another
 * pid namespace of the same kernel is judged by it.
 */
import { spawn, spawnSync } from 'node:child_process';
import { afterAll, expect, it } from 'vitest';
import { ownerIsGone } from '../../server/attachments/owners.ts';
import { markThisProcess } from '../../server/processes.ts';
import { tempDir } from '../helpers/server.ts';

/** Marks itself in the data folder argv[1], prints its `PROCESS_OWNER`, and runs until its input ends. */
const PREDECESSOR = `
Promise.all([import(${JSON.stringify(new URL('../../server/processes.ts', import.meta.url).href)}), import(${JSON.stringify(new URL('../../server/attachments/owners.ts', import.meta.url).href)})]).then(([processes, owners]) => {
  processes.markThisProcess(process.argv[1]);
  console.log(owners.PROCESS_OWNER);
  process.stdin.on('end', () => process.exit(0)).resume();
});`;
/** Whether this test may start a process in a pid namespace of its own (root, or user namespaces allowed). */
const canUnshare = spawnSync('unshare', ['-r', '--pid', '--fork', 'true']).status === 0;

const releases: Array<() => void> = [];
afterAll(() => releases.forEach((release) => release()));

it.skipIf(!canUnshare)("a stopped process of another pid namespace of this kernel (a restarted container's predecessor) is judged stopped at once", async () => {
  const dataDir = await tempDir();
  releases.push(markThisProcess(dataDir));
  const predecessor = spawn('unshare', ['-r', '--pid', '--fork', process.execPath, '-e', PREDECESSOR, dataDir], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => predecessor.once('exit', resolve));
  const owner = await new Promise<string>((resolve) => predecessor.stdout.once('data', (data: Buffer) => resolve(data.toString().trim())));
  // Pid 1 of its own namespace: not a pid this process could ask about.
  expect(owner.split('.')[0]).toBe('1');
  expect(ownerIsGone(owner)).toBe(false);
  predecessor.stdin.end();
  expect(await exited).toBe(0);
  expect(ownerIsGone(owner)).toBe(true);
});
