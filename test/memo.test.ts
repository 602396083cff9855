/** `Memo` (`server/memo.ts`): an answer is worked out once per key, and never more than `most` are kept. */
import { expect, it } from 'vitest';
import { Memo } from '../server/memo.ts';

it('works an answer out once per key, a falsy one too, and lets all go past `most`', () => {
  const memo = new Memo<string, number | false>(3);
  let made = 0;
  const make = (value: number | false) => () => ((made += 1), value);
  expect(memo.get('a', make(1))).toBe(1);
  expect(memo.get('a', make(9))).toBe(1);
  expect(memo.get('b', make(false))).toBe(false);
  expect(memo.get('b', make(9))).toBe(false);
  expect(made).toBe(2);
  memo.get('c', make(3));
  // A fourth key: the three kept go, and each is worked out again when asked.
  expect(memo.get('d', make(4))).toBe(4);
  expect(memo.get('a', make(5))).toBe(5);
  expect(made).toBe(5);
});
