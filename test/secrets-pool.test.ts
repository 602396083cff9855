/**
 * `freshBytes` cuts its draws from 4 KiB refills of the generator (`randomPool` in
 * `server/secrets.ts`). A pool made the same way here records every refill, so each draw can be
 * checked against the very bytes it must be: the next ones of the current refill, each given out
 * once and in order, and a draw that does not fit in what is left taken from the start of the
 * next refill.
 */
import { randomFillSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { randomPool } from '../server/secrets.ts';

function recordedPool() {
  const fills: Buffer[] = [];
  const draw = randomPool((pool) => {
    randomFillSync(pool);
    fills.push(Buffer.from(pool));
  });
  return { draw, fills };
}

describe('a pool of random bytes', () => {
  it('gives out each refill’s bytes once, in order, and never a draw across two refills', () => {
    const { draw, fills } = recordedPool();
    const sizes = Array.from({ length: 900 }, (_, i) => (i % 7 === 0 ? 23 : i % 5 === 0 ? 12 : 16));
    const draws = sizes.map((n) => draw(n));
    expect(fills.length).toBeGreaterThanOrEqual(3);
    let fill = -1;
    let taken = 4096;
    sizes.forEach((n, i) => {
      if (taken + n > 4096) {
        fill += 1;
        taken = 0;
      }
      expect(draws[i]?.equals(fills[fill]!.subarray(taken, taken + n)), `draw ${i}`).toBe(true);
      taken += n;
    });
    expect(fill).toBe(fills.length - 1);
  });

  it('takes a draw that would end one byte past the refill from the next one', () => {
    const { draw, fills } = recordedPool();
    for (let i = 0; i < 255; i++) draw(16);
    expect(draw(16).equals(fills[0]!.subarray(4080, 4096))).toBe(true);
    for (let i = 0; i < 255; i++) draw(16);
    // 4,080 bytes of the second refill are taken: 17 more do not fit.
    expect(fills.length).toBe(2);
    expect(draw(17).equals(fills[2]!.subarray(0, 17))).toBe(true);
  });

  it('takes a large draw from the generator directly, leaving the pool where it was', () => {
    const { draw, fills } = recordedPool();
    expect(draw(1000).length).toBe(1000);
    expect(fills.length).toBe(0);
    expect(draw(16).equals(fills[0]!.subarray(0, 16))).toBe(true);
  });
});
