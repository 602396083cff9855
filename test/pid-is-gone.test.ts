/**
 * `pidIsGone` (`server/leases.ts`): how a lease left by a stopped process of this machine is told
 * from a live one's (tus uploads, chunked assemblies, the mail queue).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { pidIsGone } from '../server/leases.ts';
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
