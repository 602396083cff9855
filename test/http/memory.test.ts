/**
 * The server gives start-up's memory back before its first request (`server/memory.ts`): one
 * memory-reducing collection once it listens, when Node exposes `gc`, as `npm start` has it do.
 * Resident memory itself is measured by `npm run bench` (row 13).
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { settleAfterStart } from '../../server/memory.ts';
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

  it('shrinks a young generation grown to its cap, under npm start flags', async () => {
    const { flags } = startCommand();
    expect(flags).toContain('--expose-gc');
    // Objects that live a while, as start-up's do, grow the young generation to its cap.
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
});

