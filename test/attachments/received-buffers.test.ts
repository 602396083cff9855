/**
 * Received bytes' buffers are given back as they are used (`received-buffers.ts`): a young-
 * generation collection every few megabytes a store takes in, when Node exposes `gc`, as
 * `npm start` has it do. Memory itself is measured by `npm run bench` (rows 11b and 12b).
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { COLLECT_EVERY_BYTES, receivedBytesCollector } from '../../server/attachments/store/received-buffers.ts';
import type { ExposedGc } from '../../server/memory.ts';
import { startCommand } from '../helpers/start-command.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

describe('received buffers', () => {
  it('collect the young generation once per COLLECT_EVERY_BYTES received, across requests, and nothing without gc', () => {
    const calls: unknown[] = [];
    const gc: ExposedGc = (options) => calls.push(options);
    const received = receivedBytesCollector(gc, 1000);
    for (let i = 0; i < 9; i += 1) received(100);
    expect(calls).toEqual([]);
    received(100);
    expect(calls).toEqual([{ type: 'minor', execution: 'sync' }]);
    received(2500);
    expect(calls).toHaveLength(2);
    expect(() => receivedBytesCollector(undefined)(10 * COLLECT_EVERY_BYTES)).not.toThrow();
  });

  it('npm start exposes gc, and a file a store takes in brings on young-generation collections as it arrives', async () => {
    expect(startCommand().flags).toContain('--expose-gc');
    // A Meter, as every store's receive has, taking in three times the interval.
    const script = `
      import { Readable } from 'node:stream';
      import { pipeline } from 'node:stream/promises';
      import { COLLECT_EVERY_BYTES } from './server/attachments/store/received-buffers.ts';
      import { Meter } from './server/attachments/store/meter.ts';
      const pieces = Array.from({ length: (3 * COLLECT_EVERY_BYTES) / 65536 }, () => Buffer.alloc(65536));
      await pipeline(Readable.from(pieces), new Meter(Infinity, false), async function* (source) { for await (const _ of source); });
      console.log('received');
    `;
    const { stdout } = await run(process.execPath, ['--expose-gc', '--trace-gc', '--input-type=module', '-e', script], { cwd: ROOT });
    expect(stdout).toContain('received');
    // V8 names a collection asked for through gc() "testing" (a young one, whichever young collector, or the end of a full one under way).
    const asked = stdout.split('\n').filter((line) => /(Scavenge|Minor Mark-Sweep|Mark-Compact|Mark-Sweep).* testing/.test(line));
    expect(asked.length).toBeGreaterThanOrEqual(3);
  });
});
