/**
 * What the process does about its own memory where V8, left alone, keeps more than it needs.
 * Only when Node exposes `gc` (`npm start`'s `--expose-gc`); the tests run the TypeScript sources
 * without it, and then nothing here does anything. Measured by `npm run bench` (rows 11b, 12b,
 * 13; docs/performance.md).
 */

/** V8's `gc` function, as `--expose-gc` exposes it. */
export type ExposedGc = (options: { type: 'minor' | 'major'; execution: 'sync'; flavor?: 'regular' | 'last-resort' }) => void;

/** The process's `gc`, if Node exposes it. */
export const exposedGc = (globalThis as { gc?: ExposedGc }).gc;

/**
 * Once the server listens, before it answers anything: one memory-reducing full collection, the
 * one V8 runs when its embedder reports low memory ("last resort"). Start-up (the modules, the
 * migrations, the first schemas built) allocates fast enough that V8 grows its young generation
 * and keeps it, and leaves pages of the old generation half used; nothing at rest brings on a
 * collection that would give them back. This one shrinks the young generation to its least (it
 * grows again under load, as V8 sees objects survive), compacts the old one and frees the
 * emptied pages: about 10 MB less resident at rest, for about 65 ms once, before the first
 * request. It is also why `npm start` no longer caps the young generation: the cap saved memory
 * at rest only, which this gives back anyway, and cost request rates (docs/performance.md).
 */
export function settleAfterStart(gc: ExposedGc | undefined = exposedGc): void {
  gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

/** How often `settleWhenIdle` looks, and how much the resident memory must have grown since it last settled. */
export const IDLE_CHECK_MS = 10_000;
export const IDLE_GROWTH_BYTES = 16 * 1024 * 1024;

/**
 * After a burst of requests, the same memory-reducing collection, once the burst is over. Under
 * load V8 raises its heap's limits and leaves the garbage of thousands of requests in pages it
 * keeps (`npm run bench`'s machine: a server resting at 86 MB held 183–220 MB after 20 s of
 * requests at 32 connections, and still 30 s later: nothing at rest brings on a collection).
 * Every `IDLE_CHECK_MS` it looks: when no request arrived since the last look and the process's
 * resident memory has grown by `IDLE_GROWTH_BYTES` since it last settled, it collects, once
 * (what the collection cannot give back counts as settled): 98–111 MB after the same burst. A
 * request that arrives meanwhile waits for it (about 0.1 s after a burst: two passes), as it
 * would behind any. A server that began a request since the last look is never collected this
 * way; one long request still going (a slow upload or download) may be paused once as briefly.
 * Returns the function that stops it.
 */
export function settleWhenIdle(
  server: { on(event: 'request', listener: () => void): unknown },
  gc: ExposedGc | undefined = exposedGc,
  residentBytes: () => number = () => process.memoryUsage.rss(),
  every = IDLE_CHECK_MS,
): () => void {
  if (!gc) return () => undefined;
  let requested = false;
  server.on('request', () => {
    requested = true;
  });
  let settled = residentBytes();
  const timer = setInterval(() => {
    if (requested) {
      requested = false;
      return;
    }
    if (residentBytes() < settled + IDLE_GROWTH_BYTES) return;
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    settled = residentBytes();
  }, every);
  timer.unref();
  return () => clearInterval(timer);
}
