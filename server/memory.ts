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
 * to the cap (`--max-semi-space-size=4`: 8 MB, both halves written to) and keeps it, and leaves
 * pages of the old generation half used; nothing at rest brings on a collection that would give
 * them back. This one shrinks the young generation to its least (it grows again under load, as
 * V8 sees objects survive), compacts the old one and frees the emptied pages: about 10 MB less
 * resident at rest for about 65 ms once, before the first request.
 */
export function settleAfterStart(gc: ExposedGc | undefined = exposedGc): void {
  gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}
