/**
 * The memory of received bytes, given back as they are used rather than in heaps. A request's
 * body arrives in the socket's buffers (64 KiB each, outside V8's heap), which are garbage once
 * their bytes are written or copied; but V8 frees such a buffer only when the small object that
 * holds it is collected, and those objects are too few and too small to bring on a collection
 * themselves: an upload's dead buffers piled up to 20–28 MB before V8's own limit for memory
 * outside its heap brought on a full collection (`npm run bench`, rows 11b and 12b), and the
 * allocator then kept most of those pages. A young-generation collection every
 * `COLLECT_EVERY_BYTES` received (across all requests of the process) frees them once used; it
 * costs well under a millisecond, as an upload's objects die young.
 *
 * Only when Node exposes `gc` (`npm start`'s `--expose-gc`); otherwise (the tests, which run the
 * TypeScript sources) nothing changes.
 */

import { exposedGc, type ExposedGc } from '../../memory.ts';

/** How many received bytes between two young-generation collections. */
export const COLLECT_EVERY_BYTES = 4 * 1024 * 1024;

/** Counts received bytes, collecting the young generation with `gc` every `every` bytes; does nothing without `gc`. */
export function receivedBytesCollector(gc: ExposedGc | undefined, every = COLLECT_EVERY_BYTES): (bytes: number) => void {
  if (!gc) return () => undefined;
  let since = 0;
  return (bytes) => {
    since += bytes;
    if (since < every) return;
    since = 0;
    gc({ type: 'minor', execution: 'sync' });
  };
}

/** The process's: every file a store takes in counts its bytes here (`Meter`). */
export const bytesReceived = receivedBytesCollector(exposedGc);
