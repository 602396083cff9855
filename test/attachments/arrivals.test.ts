/**
 * `ChunkArrivals.awaitOthers`: a chunk request that saw others of its upload under way when it
 * read where the upload stands waits until they are done, and then always reads again, even when
 * they were done before its first look (their chunks recorded, perhaps the file assembled, after
 * its read). The arrivals' table is stubbed: what is under way is what the test says.
 */
import pino from 'pino';
import { expect, it } from 'vitest';
import { ChunkArrivals } from '../../server/attachments/arrivals.ts';
import { newOwner } from '../../server/attachments/owners.ts';

function arrivalsWhere(stillArriving: () => string[]) {
  let looks = 0;
  const repo = {
    holdersStillArriving: async () => {
      looks += 1;
      return stillArriving();
    },
  };
  const arrivals = new ChunkArrivals({ repo: repo as never, holder: newOwner(), logger: pino({ level: 'silent' }), now: Date.now });
  return { arrivals, looks: () => looks };
}

it('reads again after others that were under way, even when they were done before the first look', async () => {
  const { arrivals, looks } = arrivalsWhere(() => []);
  expect(await arrivals.awaitOthers([{ id: 'other', holder: newOwner() }])).toBe(true);
  expect(looks()).toBe(1);
});

it('waits while another is under way, then reads again', async () => {
  const holder = newOwner();
  let left = 3;
  const { arrivals, looks } = arrivalsWhere(() => (left-- > 0 ? [holder] : []));
  expect(await arrivals.awaitOthers([{ id: 'other', holder }])).toBe(true);
  expect(looks()).toBe(4);
});

it('neither waits nor reads again when none was under way, or only requests of stopped processes', async () => {
  const { arrivals, looks } = arrivalsWhere(() => ['unreadable']);
  expect(await arrivals.awaitOthers([])).toBe(false);
  // A holder that names no process (as one written before holders were recorded) is not waited for.
  expect(await arrivals.awaitOthers([{ id: 'other', holder: 'unreadable' }])).toBe(false);
  expect(looks()).toBe(0);
});
