/**
 * A list of notes reads every note its query matches before the reader's rights sort and page
 * them: a few thousand submissions are tens of megabytes a list. A review sent 28 batches of ten
 * `venue.notes` with `limit=1000` at once, and the process ran out of memory. Now a batch lists
 * notes once at most, and lists run four at a time, 256 waiting, 64 of one person's (or guest
 * address's) running or waiting: past that, a clear refusal (429 or 503 with `Retry-After`)
 * rather than memory without end; the many lists a page of the real web client asks for together
 * (every page of a large venue's submissions at once) all wait their turn.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gate } from '../../server/gate.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

describe('lists of notes asked for together', () => {
  it('twenty at once, by a person or a guest, are all answered', async () => {
    const person = await createActiveUser(server);
    const { client } = await loggedIn(server, person.email);
    const asked = (fetcher: (path: string) => Promise<{ status: number }>) => Promise.all(Array.from({ length: 20 }, (_, i) => fetcher(`/notes?invitation=Nowhere.org/-/Submission&offset=${i}`)));
    expect((await asked((path) => client.get(path))).map((res) => res.status)).toEqual(Array(20).fill(200));
    expect((await asked((path) => fetch(server.url + path))).map((res) => res.status)).toEqual(Array(20).fill(200));
  });
});

/** Work that ends when told to. */
function held(): { work: () => Promise<string>; release: () => void } {
  let release = () => {};
  const done = new Promise<string>((resolve) => (release = () => resolve('done')));
  return { work: () => done, release };
}

describe('the gate of heavy reads', () => {
  it('runs `width` at once, queues `maxWaiting`, refuses past that with 503, and one owner past its share with 429', async () => {
    const gate = new Gate({ width: 2, maxWaiting: 2, perOwner: 2, what: 'note lists' });
    const pieces = Array.from({ length: 4 }, held);
    let started = 0;
    const running = pieces.map((piece, i) => gate.run(`owner-${i}`, () => ((started += 1), piece.work())));
    await Promise.resolve();
    expect(started).toBe(2);
    await expect(gate.run('owner-9', async () => 'x')).rejects.toMatchObject({ name: 'ServiceUnavailableError', status: 503, details: { retryAfter: 1 } });
    // A waiting piece starts as soon as a running one ends, and each gets its own answer.
    pieces[0]?.release();
    await running[0];
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toBe(3);
    for (const piece of pieces.slice(1)) piece.release();
    expect(await Promise.all(running)).toEqual(['done', 'done', 'done', 'done']);

    // One owner's share: two running or waiting.
    const mine = [held(), held()];
    const both = mine.map((piece) => gate.run('me', piece.work));
    await expect(gate.run('me', async () => 'x')).rejects.toMatchObject({ name: 'TooManyError', status: 429 });
    // Someone else waits their turn (both places are mine), and gets it when one of mine ends.
    const theirs = gate.run('someone else', async () => 'theirs');
    for (const piece of mine) piece.release();
    await Promise.all(both);
    expect(await theirs).toBe('theirs');
    // A failure frees its place too.
    await expect(gate.run('me', async () => Promise.reject(new Error('failed')))).rejects.toThrow('failed');
    expect(await gate.run('me', async () => 'again')).toBe('again');
    expect(await Promise.all([gate.run('me', async () => 1), gate.run('me', async () => 2)])).toEqual([1, 2]);
  });
});
