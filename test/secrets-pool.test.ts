/**
 * `freshBytes` cuts its draws from 4 KiB refills of the generator (`server/secrets.ts`). Every
 * refill is recorded here, so each draw can be checked against the very bytes it must be: the
 * next ones of the current refill, each given out once and in order, and a draw that does not
 * fit in what is left taken from the start of the next refill.
 */
import { describe, expect, it, vi } from 'vitest';

const fills = vi.hoisted(() => [] as Buffer[]);
vi.mock('node:crypto', async (original) => {
  const crypto = await original<typeof import('node:crypto')>();
  return {
    ...crypto,
    randomFillSync: <T extends NodeJS.ArrayBufferView>(buffer: T): T => {
      crypto.randomFillSync(buffer);
      fills.push(Buffer.from(Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength)));
      return buffer;
    },
  };
});

const { freshBytes } = await import('../server/secrets.ts');

describe('freshBytes', () => {
  it('gives out each refill’s bytes once, in order, and never a draw across two refills', () => {
    const sizes = Array.from({ length: 900 }, (_, i) => (i % 7 === 0 ? 23 : i % 5 === 0 ? 12 : 16));
    const draws = sizes.map((n) => freshBytes(n));
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
    // Drawn to the start of a refill first, so the pool's position is known: 16 bytes in.
    const start = fills.length;
    while (fills.length === start) freshBytes(16);
    for (let i = 1; i < 255; i++) freshBytes(16);
    expect(freshBytes(16).equals(fills.at(-1)!.subarray(4080, 4096))).toBe(true);
    for (let i = 0; i < 255; i++) freshBytes(16);
    // 4,080 bytes of this refill are taken: 17 more do not fit.
    const last = fills.length;
    const draw = freshBytes(17);
    expect(fills.length).toBe(last + 1);
    expect(draw.equals(fills.at(-1)!.subarray(0, 17))).toBe(true);
  });

  it('takes a large draw from the generator directly, leaving the pool where it was', () => {
    const before = fills.length;
    expect(freshBytes(1000).length).toBe(1000);
    expect(fills.length).toBe(before);
  });
});
