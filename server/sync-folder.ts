/**
 * Flushing a folder's entries to disk, shared by the areas that promise a name made or renamed
 * survives a power loss: the mail outbox folder (mail/transport.ts) and backups and restores
 * (operations/).
 */
import { open } from 'node:fs/promises';

/** Flushes a folder's entries (names made, renamed) to disk, as a file's `sync` does its bytes. */
export async function syncFolder(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
