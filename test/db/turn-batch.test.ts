/**
 * `TurnBatch` (`db/turn-batch.ts`): the calls of one turn of the event loop run together, each
 * answered with its own result, and a failed run fails each of its calls.
 */
import { describe, expect, it } from 'vitest';
import { TurnBatch } from '../../db/turn-batch.ts';

/** A batch that doubles numbers, recording each run's items. */
function doubling(most: number, fail?: (items: readonly number[]) => unknown) {
  const runs: number[][] = [];
  const batch = new TurnBatch<number, number>(async (items) => {
    runs.push([...items]);
    const error = fail?.(items);
    if (error) throw error;
    return items.map((n) => n * 2);
  }, most);
  return { batch, runs };
}

describe('TurnBatch', () => {
  it('runs the calls of one turn together, in order, each with its own result', async () => {
    const { batch, runs } = doubling(10);
    expect(await Promise.all([batch.add(1), batch.add(2), batch.add(3)])).toEqual([2, 4, 6]);
    expect(runs).toEqual([[1, 2, 3]]);
  });

  it('runs the calls of a later turn in a batch of their own', async () => {
    const { batch, runs } = doubling(10);
    const first = batch.add(1);
    await new Promise((resolve) => setImmediate(resolve));
    const second = batch.add(2);
    expect(await Promise.all([first, second])).toEqual([2, 4]);
    expect(runs).toEqual([[1], [2]]);
  });

  it('runs at most `most` items at a time', async () => {
    const { batch, runs } = doubling(2);
    expect(await Promise.all([1, 2, 3, 4, 5].map((n) => batch.add(n)))).toEqual([2, 4, 6, 8, 10]);
    expect(runs).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('fails each call of a failed run with its error, and only those', async () => {
    const error = new Error('the statement failed');
    const { batch } = doubling(2, (items) => (items.includes(3) ? error : undefined));
    const results = await Promise.allSettled([1, 2, 3, 4].map((n) => batch.add(n)));
    expect(results).toEqual([
      { status: 'fulfilled', value: 2 },
      { status: 'fulfilled', value: 4 },
      { status: 'rejected', reason: error },
      { status: 'rejected', reason: error },
    ]);
  });

  it('fails the calls when the run throws at once, or answers a result short', async () => {
    const thrown = new Error('thrown before any promise');
    const throwing = new TurnBatch<number, number>(() => {
      throw thrown;
    }, 5);
    await expect(throwing.add(1)).rejects.toBe(thrown);
    const short = new TurnBatch<number, number>(async () => [1], 5);
    const results = await Promise.allSettled([short.add(1), short.add(2)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });

  it('refuses a batch size that is not a whole number from 1', () => {
    for (const most of [0, -1, 1.5, Number.NaN]) expect(() => new TurnBatch(async () => [], most)).toThrow(/most/);
  });
});
