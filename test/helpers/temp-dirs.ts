/**
 * Temporary folders for tests, each removed once its test file is done (`test/setup/temp-dirs.ts`
 * calls `removeTempDirs` after every file), whatever the file did or failed to do: a run leaves
 * nothing in the system's temporary folder. Several a file held 33–49 MB each (a database, uploaded
 * files) and some were never removed.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** Made by `tempDir` in this worker and not yet removed; a worker runs its files one at a time. */
const made = new Set<string>();

/** A fresh temporary folder, removed after its test file. */
export async function tempDir(prefix = 'service-test-'): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  made.add(dir);
  return dir;
}

/**
 * Removes every folder `tempDir` made so far (one already removed is no error). A folder that
 * cannot be removed (a process a test killed still closing a file in it) is left, never failing
 * the file that made it: the clean-up is no part of what a test checks.
 */
export async function removeTempDirs(): Promise<void> {
  const dirs = [...made];
  made.clear();
  await Promise.allSettled(dirs.map((dir) => rm(dir, { recursive: true, force: true, maxRetries: 3 })));
}
