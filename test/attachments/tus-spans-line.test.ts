/**
 * `TusSpans.line`: the parts of a parallel tus upload are placed in the order their creations
 * reached the service, whatever order the work before their placement (who is asking, the
 * checks) ends in; a place let go without running frees the line; other keys never wait.
 */
import { describe, expect, it } from 'vitest';
import { TusSpans } from '../../server/attachments/tus-spans.ts';

const spans = () => new TusSpans({} as never, {} as never, Date.now);
const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a place in line for partial uploads\' creations', () => {
  it('runs the creations in the order the places were taken, even when the earlier ones get to run later', async () => {
    const line = spans();
    const order: string[] = [];
    const [a, b, c] = [line.line('key'), line.line('key'), line.line('key')];
    // c and b are ready at once; a only after a while (its session took longer to read).
    const done = [
      c.run(async () => order.push('c')),
      b.run(async () => order.push('b')),
      later(30).then(() => a.run(async () => order.push('a'))),
    ];
    await Promise.all(done);
    expect(order).toEqual(['a', 'b', 'c']);
  });

  it('a place let go without running (a refused request) lets the next one run; a failed run too', async () => {
    const line = spans();
    const order: string[] = [];
    const [a, b, c] = [line.line('key'), line.line('key'), line.line('key')];
    a.leave();
    await expect(b.run(async () => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    await c.run(async () => order.push('c'));
    expect(order).toEqual(['c']);
  });

  it('another key never waits', async () => {
    const line = spans();
    const first = line.line('one');
    const other = line.line('two');
    expect(await other.run(async () => 'ran')).toBe('ran');
    first.leave();
  });
});
