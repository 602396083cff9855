/**
 * `server/processes.ts`: how a lease left by a stopped process is told from a live one's (tus
 * uploads, chunked assemblies, temporary files, the mail queue): by its pid in this pid space,
 * by its mark in another of this kernel's.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chownSync, existsSync, lutimesSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MACHINE, markThisProcess, pidIsGone, processId, processIsGone } from '../server/processes.ts';
import { markFile, runningMark, stoppedMark } from './helpers/marks.ts';
import { tempDir } from './helpers/server.ts';
import { waitUntil } from './helpers/wait.ts';

describe('pidIsGone', () => {
  it('is false for a running process, true for a pid nobody has', () => {
    expect(pidIsGone(process.pid)).toBe(false);
    expect(pidIsGone(2_147_483_646)).toBe(true);
  });

  it('is true for a process that exited and waits to be reaped (a zombie), whose pid still answers a signal', async () => {
    // A child waits in the background for a line, and its shell becomes a `sleep` that never
    // reaps it; the line is sent once the shell is that `sleep`, so the child exits unreaped
    // however the machine schedules them (a child that exited before the shell's exec could be
    // reaped by the shell, and was, once, under load).
    const parent = spawn('sh', ['-c', 'exec 3<&0; read line <&3 & echo $!; exec sleep 30'], { stdio: ['pipe', 'pipe', 'ignore'] });
    try {
      const pid = Number(await new Promise<string>((resolve) => parent.stdout.once('data', (data: Buffer) => resolve(data.toString().trim()))));
      await waitUntil(async () => readFileSync(`/proc/${parent.pid}/comm`, 'utf8').trim() === 'sleep', 'the shell to become sleep');
      parent.stdin.write('exit now\n');
      await waitUntil(async () => / Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8')), 'the child to exit unreaped');
      expect(() => process.kill(pid, 0)).not.toThrow();
      expect(pidIsGone(pid)).toBe(true);
      expect(pidIsGone(parent.pid!)).toBe(false);
    } finally {
      parent.kill('SIGKILL');
    }
  });
});

/** The tag of another pid space (`machineTag`'s form). */
const ELSEWHERE = MACHINE === 'abcdef01' ? 'abcdef02' : 'abcdef01';

/** Whether another process finds the lock of `file` held (a read of it is refused at once). */
function heldSeenFromAnotherProcess(file: string): boolean {
  const script = `const { DatabaseSync } = require('node:sqlite'); try { new DatabaseSync(process.argv[1], { readOnly: true }).prepare('SELECT 1 FROM sqlite_master').get(); console.log('free'); } catch (e) { console.log(e.errcode === 5 ? 'held' : e.message); }`;
  return spawnSync(process.execPath, ['-e', script, file], { encoding: 'utf8' }).stdout.trim() === 'held';
}

describe('processIsGone in this pid space', () => {
  it('never finds this start gone, and finds an earlier start with this pid gone (a restarted container is pid 1 again)', () => {
    expect(processIsGone(MACHINE, process.pid, processId())).toBe(false);
    expect(processIsGone(MACHINE, process.pid, randomUUID())).toBe(true);
    // A running process of this pid space, of any start.
    expect(processIsGone(MACHINE, process.ppid, randomUUID())).toBe(false);
  });
});

describe('marks', () => {
  const releases: Array<() => void> = [];
  afterEach(() => releases.splice(0).forEach((release) => release()));
  const threeDaysAgo = new Date(Date.now() - 3 * 24 * 60 * 60_000);

  it("holds this process's mark while a service works in the folder, and removes it after the last one lets go", async () => {
    const dir = await tempDir();
    releases.push(markThisProcess(dir));
    const second = markThisProcess(dir);
    const mine = markFile(dir, MACHINE, process.pid, processId());
    expect(heldSeenFromAnotherProcess(mine)).toBe(true);
    second();
    second();
    expect(heldSeenFromAnotherProcess(mine)).toBe(true);
    releases.splice(0).forEach((release) => release());
    expect(existsSync(mine)).toBe(false);
  });

  it.skipIf(process.getuid?.() !== 0)('made by root first (the admin command after a boot), leave the folders to the data folder’s owner, whose server then marks itself there', async () => {
    const NOBODY = 65534;
    const dir = await tempDir();
    chownSync(dir, NOBODY, NOBODY);
    releases.push(markThisProcess(dir));
    const boot = readdirSync(path.join(dir, 'processes'));
    expect(boot).toHaveLength(1);
    for (const folder of [path.join(dir, 'processes'), path.join(dir, 'processes', boot[0]!)]) expect(statSync(folder).uid, folder).toBe(NOBODY);
    // The data folder's owner, not root, marks itself beside root's mark.
    const script = `import { markThisProcess } from ${JSON.stringify(path.resolve('server/processes.ts'))}; markThisProcess(${JSON.stringify(dir)}); console.log('marked');`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { uid: NOBODY, gid: NOBODY, encoding: 'utf8' });
    expect(child.stderr).toBe('');
    expect(child.stdout.trim()).toBe('marked');
  });

  it('judges a process of another pid space by its mark: running while its lock is held, stopped once free, unknown without one', async () => {
    const dir = await tempDir();
    releases.push(markThisProcess(dir));
    const id = randomUUID();
    const running = await runningMark(dir, ELSEWHERE, 1, id);
    try {
      expect(processIsGone(ELSEWHERE, 1, id)).toBe(false);
    } finally {
      await running.stop();
    }
    expect(processIsGone(ELSEWHERE, 1, id)).toBe(true);
    // No mark where this process looks: its leases are waited out.
    expect(processIsGone(ELSEWHERE, 2, id)).toBe(false);
    // Another kernel's folder is not looked in.
    const otherKernel = path.join(dir, 'processes', '00000000-0000-0000-0000-000000000000');
    mkdirSync(otherKernel);
    writeFileSync(path.join(otherKernel, path.basename(markFile(dir, ELSEWHERE, 3, id))), '');
    expect(processIsGone(ELSEWHERE, 3, id)).toBe(false);
  });

  it('never takes the free mark of an earlier start for a running process with the same host, pid namespace number and pid', async () => {
    // The kernel gives a freed pid namespace's number again, and a container's server is pid 1:
    // a stopped start's mark, in one folder, has the tag and pid of a running one marked in another.
    const [earlierFolder, runningFolder] = [await tempDir(), await tempDir()];
    releases.push(markThisProcess(earlierFolder), markThisProcess(runningFolder));
    const [earlier, now] = [randomUUID(), randomUUID()];
    stoppedMark(earlierFolder, ELSEWHERE, 1, earlier);
    const running = await runningMark(runningFolder, ELSEWHERE, 1, now);
    try {
      expect(processIsGone(ELSEWHERE, 1, now)).toBe(false);
      expect(processIsGone(ELSEWHERE, 1, earlier)).toBe(true);
    } finally {
      await running.stop();
    }
    // Without a mark of its own anywhere (its marking failed), a running one is not judged by another's.
    expect(processIsGone(ELSEWHERE, 1, randomUUID())).toBe(false);
  });

  it('reads no link, pipe or folder in place of a mark, and neither waits on nor removes one', async () => {
    const dir = await tempDir();
    releases.push(markThisProcess(dir));
    const [pipe, link, folder, target] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    expect(spawnSync('mkfifo', [markFile(dir, ELSEWHERE, 1, pipe)]).status).toBe(0);
    stoppedMark(dir, ELSEWHERE, 4, target);
    symlinkSync(markFile(dir, ELSEWHERE, 4, target), markFile(dir, ELSEWHERE, 1, link));
    mkdirSync(markFile(dir, ELSEWHERE, 1, folder));
    for (const id of [pipe, link, folder]) expect(processIsGone(ELSEWHERE, 1, id)).toBe(false);
    // A process starting on the folder later passes them by, however old.
    for (const id of [pipe, link, target]) lutimesSync(markFile(dir, ELSEWHERE, id === target ? 4 : 1, id), threeDaysAgo, threeDaysAgo);
    releases.splice(0).forEach((release) => release());
    releases.push(markThisProcess(dir));
    const left = readdirSync(path.dirname(markFile(dir, ELSEWHERE, 1, pipe)));
    expect(left).toEqual(expect.arrayContaining([pipe, link, folder].map((id) => path.basename(markFile(dir, ELSEWHERE, 1, id)))));
    expect(left).not.toContain(path.basename(markFile(dir, ELSEWHERE, 4, target)));
  });

  it("removes, when a process marks itself, the marks of processes stopped for two days, and keeps the others'", async () => {
    const dir = await tempDir();
    const [longAgo, justNow, runningLong] = [randomUUID(), randomUUID(), randomUUID()];
    // Stopped long ago; stopped just now (what it held may still be asked about); running for long.
    stoppedMark(dir, ELSEWHERE, 7, longAgo);
    utimesSync(markFile(dir, ELSEWHERE, 7, longAgo), threeDaysAgo, threeDaysAgo);
    stoppedMark(dir, ELSEWHERE, 6, justNow);
    const running = await runningMark(dir, ELSEWHERE, 8, runningLong);
    utimesSync(markFile(dir, ELSEWHERE, 8, runningLong), threeDaysAgo, threeDaysAgo);
    const otherKernel = path.join(dir, 'processes', '00000000-0000-0000-0000-000000000000');
    mkdirSync(otherKernel);
    writeFileSync(path.join(otherKernel, 'abcdef03.9.0123456789abcdef'), '');
    utimesSync(path.join(otherKernel, 'abcdef03.9.0123456789abcdef'), threeDaysAgo, threeDaysAgo);
    try {
      releases.push(markThisProcess(dir));
      const expected = [markFile(dir, ELSEWHERE, 6, justNow), markFile(dir, ELSEWHERE, 8, runningLong), markFile(dir, MACHINE, process.pid, processId())];
      expect(readdirSync(path.dirname(expected[0] ?? '')).sort()).toEqual(expected.map((file) => path.basename(file)).sort());
      expect(existsSync(otherKernel)).toBe(false);
      expect(processIsGone(ELSEWHERE, 6, justNow)).toBe(true);
    } finally {
      await running.stop();
    }
  });
});
