/**
 * The server gives start-up's memory back before its first request (`server/memory.ts`): one
 * memory-reducing collection once it listens, when Node exposes `gc`, as `npm start` has it do.
 * Resident memory itself is measured by `npm run bench` (row 13).
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { EventEmitter } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { IDLE_CHECK_MS, IDLE_GROWTH_BYTES, settleAfterStart, settleWhenIdle } from '../../server/memory.ts';
import { startCommand } from '../helpers/start-command.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

describe('memory after start', () => {
  it('asks for one last-resort full collection, and does nothing without gc', () => {
    const calls: unknown[] = [];
    settleAfterStart((options) => calls.push(options));
    expect(calls).toEqual([{ type: 'major', execution: 'sync', flavor: 'last-resort' }]);
    expect(() => settleAfterStart(undefined)).not.toThrow();
  });

  it('shrinks a young generation grown by start-up, under npm start flags', async () => {
    const { flags } = startCommand();
    expect(flags).toContain('--expose-gc');
    // Objects that live a while, as start-up's do, grow the young generation.
    const script = `
      import v8 from 'node:v8';
      import { settleAfterStart } from './server/memory.ts';
      const young = () => v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space').space_size;
      let kept = [];
      for (let i = 0; i < 2_000_000; i += 1) {
        kept.push({ i, text: 'piece ' + i });
        if (kept.length > 100_000) kept = [];
      }
      const before = young();
      settleAfterStart();
      console.log(JSON.stringify({ before, after: young() }));
    `;
    const { stdout } = await run(process.execPath, [...flags, '--input-type=module', '-e', script], { cwd: ROOT });
    const { before, after } = JSON.parse(stdout) as { before: number; after: number };
    expect(before).toBeGreaterThanOrEqual(4 * 1024 * 1024);
    expect(after).toBeLessThanOrEqual(before / 4);
  });

  it('collects once a burst of requests is over and memory grew, never while requests arrive, and once per growth', () => {
    vi.useFakeTimers();
    try {
      const server = new EventEmitter();
      const calls: unknown[] = [];
      let resident = 100 * 1024 * 1024;
      const stop = settleWhenIdle(server, (options) => {
        calls.push(options);
        resident -= IDLE_GROWTH_BYTES;
      }, () => resident);

      // Grown, but busy: a request in every interval.
      resident += 2 * IDLE_GROWTH_BYTES;
      for (let i = 0; i < 3; i += 1) {
        server.emit('request');
        vi.advanceTimersByTime(IDLE_CHECK_MS);
      }
      expect(calls).toEqual([]);

      // The burst is over: the next look collects, and what stays counts as settled.
      vi.advanceTimersByTime(IDLE_CHECK_MS);
      expect(calls).toEqual([{ type: 'major', execution: 'sync', flavor: 'last-resort' }]);
      vi.advanceTimersByTime(5 * IDLE_CHECK_MS);
      expect(calls).toHaveLength(1);

      // Grown by less than the threshold: left alone.
      resident += IDLE_GROWTH_BYTES / 2;
      vi.advanceTimersByTime(2 * IDLE_CHECK_MS);
      expect(calls).toHaveLength(1);

      stop();
      resident += 4 * IDLE_GROWTH_BYTES;
      vi.advanceTimersByTime(2 * IDLE_CHECK_MS);
      expect(calls).toHaveLength(1);
      // Without gc there is nothing to stop and no listener.
      const bare = new EventEmitter();
      settleWhenIdle(bare, undefined)();
      expect(bare.listenerCount('request')).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});
