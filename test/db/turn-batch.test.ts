/**
 * `TurnBatch` (`db/turn-batch.ts`): the calls of one turn of the event loop run together, each
 * answered with its own result; when a run of several fails, each runs alone, so a call fails
 * only as it would have alone.
 */
import { describe, expect, it } from 'vitest';
import { TurnBatch } from '../../db/turn-batch.ts';

/** A batch that doubles numbers, recording each run's items. */
function doubling(most: number, fail?: (items: readonly number[]) => unknown, runAlone: (error: unknown) => boolean = () => true) {
  const runs: number[][] = [];
  const batch = new TurnBatch<number, number>(async (items) => {
    runs.push([...items]);
    const error = fail?.(items);
    if (error) throw error;
    return items.map((n) => n * 2);
  }, { most, runAlone });
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

  it('runs each item of a failed run alone: only an item that fails alone fails', async () => {
    const error = new Error('the statement failed');
    // A run fails whenever it holds 3, as a statement fails with a row that breaks a constraint.
    const { batch, runs } = doubling(2, (items) => (items.includes(3) ? error : undefined));
    const results = await Promise.allSettled([1, 2, 3, 4, 5].map((n) => batch.add(n)));
    expect(results).toEqual([
      { status: 'fulfilled', value: 2 },
      { status: 'fulfilled', value: 4 },
      { status: 'rejected', reason: error },
      { status: 'fulfilled', value: 8 },
      { status: 'fulfilled', value: 10 },
    ]);
    expect(runs).toEqual([[1, 2], [3, 4], [5], [3], [4]]);
  });

  it('fails every item of a run at once when its failure is not one item\'s (the database busy), running none again', async () => {
    const busy = Object.assign(new Error('the database is busy'), { code: 'SQLITE_BUSY' });
    const { batch, runs } = doubling(2, (items) => (items.includes(3) ? busy : undefined), (error) => error !== busy);
    const results = await Promise.allSettled([1, 2, 3, 4, 5].map((n) => batch.add(n)));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect(runs).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('fails an item alone with the error of its own run', async () => {
    let runsSoFar = 0;
    const batch = new TurnBatch<number, number>(async () => {
      runsSoFar += 1;
      throw new Error(`run ${runsSoFar}`);
    }, { most: 5, runAlone: () => true });
    const results = await Promise.allSettled([batch.add(1), batch.add(2)]);
    expect(results.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : r.status))).toEqual(['run 2', 'run 3']);
    const alone = await Promise.allSettled([batch.add(1)]);
    expect(alone.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : r.status))).toEqual(['run 4']);
  });

  it('fails the calls when the run throws at once, or answers a result short', async () => {
    const thrown = new Error('thrown before any promise');
    const throwing = new TurnBatch<number, number>(() => {
      throw thrown;
    }, { most: 5, runAlone: () => true });
    await expect(throwing.add(1)).rejects.toBe(thrown);
    const short = new TurnBatch<number, number>(async () => [1], { most: 5, runAlone: () => true });
    const results = await Promise.allSettled([short.add(1), short.add(2)]);
    // Run together, one result is short; each run alone answers its one.
    expect(results).toEqual([{ status: 'fulfilled', value: 1 }, { status: 'fulfilled', value: 1 }]);
    const nothing = new TurnBatch<number, number>(async () => [], { most: 5, runAlone: () => true });
    expect((await Promise.allSettled([nothing.add(1)])).map((r) => r.status)).toEqual(['rejected']);
  });

  it('refuses a batch size that is not a whole number from 1', () => {
    for (const most of [0, -1, 1.5, Number.NaN]) expect(() => new TurnBatch(async () => [], { most, runAlone: () => true })).toThrow(/most/);
  });
});
