/**
 * `server/processes.ts`: how a lease left by a stopped process is told from a live one's (tus
 * uploads, chunked assemblies, temporary files, the mail queue): by its pid in this pid space,
 * by its mark in another of this kernel's.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MACHINE, markThisProcess, pidIsGone, processIsGone } from '../server/processes.ts';
import { markFile, runningMark, stoppedMark } from './helpers/marks.ts';
import { tempDir } from './helpers/server.ts';
import { waitUntil } from './helpers/wait.ts';

describe('pidIsGone', () => {
  it('is false for a running process, true for a pid nobody has', () => {
    expect(pidIsGone(process.pid)).toBe(false);
    expect(pidIsGone(2_147_483_646)).toBe(true);
  });

  it('is true for a process that exited and waits to be reaped (a zombie), whose pid still answers a signal', async () => {
    // `sleep 0` runs in the background, then its shell becomes a `sleep` that never reaps it.
    const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const pid = Number(await new Promise<string>((resolve) => parent.stdout.once('data', (data: Buffer) => resolve(data.toString().trim()))));
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

describe('marks', () => {
  const releases: Array<() => void> = [];
  afterEach(() => releases.splice(0).forEach((release) => release()));

  it("holds this process's mark while a service works in the folder, and removes it after the last one lets go", async () => {
    const dir = await tempDir();
    releases.push(markThisProcess(dir));
    const second = markThisProcess(dir);
    const mine = markFile(dir, MACHINE, process.pid);
    expect(heldSeenFromAnotherProcess(mine)).toBe(true);
    second();
    second();
    expect(heldSeenFromAnotherProcess(mine)).toBe(true);
    releases.splice(0).forEach((release) => release());
    expect(existsSync(mine)).toBe(false);
  });

  it('judges a process of another pid space by its mark: running while its lock is held, stopped once free, unknown without one', async () => {
    const dir = await tempDir();
    releases.push(markThisProcess(dir));
    const running = await runningMark(dir, ELSEWHERE, 1);
    try {
      expect(processIsGone(ELSEWHERE, 1)).toBe(false);
    } finally {
      await running.stop();
    }
    expect(processIsGone(ELSEWHERE, 1)).toBe(true);
    // No mark where this process looks: its leases are waited out.
    expect(processIsGone(ELSEWHERE, 2)).toBe(false);
    // Another kernel's folder is not looked in.
    const otherKernel = path.join(dir, 'processes', '00000000-0000-0000-0000-000000000000');
    mkdirSync(otherKernel);
    writeFileSync(path.join(otherKernel, `${ELSEWHERE}.3`), '');
    expect(processIsGone(ELSEWHERE, 3)).toBe(false);
  });

  it("removes, when a process marks itself, the marks of processes stopped for two days, and keeps the others'", async () => {
    const dir = await tempDir();
    const threeDaysAgo = new Date(Date.now() - 3 * 24 * 60 * 60_000);
    // Stopped long ago; stopped just now (what it held may still be asked about); running for long.
    stoppedMark(dir, ELSEWHERE, 7);
    utimesSync(markFile(dir, ELSEWHERE, 7), threeDaysAgo, threeDaysAgo);
    stoppedMark(dir, ELSEWHERE, 6);
    const running = await runningMark(dir, ELSEWHERE, 8);
    utimesSync(markFile(dir, ELSEWHERE, 8), threeDaysAgo, threeDaysAgo);
    const otherKernel = path.join(dir, 'processes', '00000000-0000-0000-0000-000000000000');
    mkdirSync(otherKernel);
    writeFileSync(path.join(otherKernel, `${ELSEWHERE}.9`), '');
    utimesSync(path.join(otherKernel, `${ELSEWHERE}.9`), threeDaysAgo, threeDaysAgo);
    try {
      releases.push(markThisProcess(dir));
      expect(readdirSync(path.dirname(markFile(dir, MACHINE, process.pid))).sort()).toEqual([`${ELSEWHERE}.6`, `${ELSEWHERE}.8`, `${MACHINE}.${process.pid}`].sort());
      expect(existsSync(otherKernel)).toBe(false);
      expect(processIsGone(ELSEWHERE, 6)).toBe(true);
    } finally {
      await running.stop();
    }
  });
});
