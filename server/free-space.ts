import { statfs } from 'node:fs/promises';

/** Room a data folder needs to be counted ready: 64 MiB, or 1 % of a smaller file system. */
export const LOW_SPACE_BYTES = 64 * 1024 * 1024;

/** What `statfs` says of a file system, in its own units. */
interface FileSystemSpace {
  bavail: number | bigint;
  blocks: number | bigint;
  bsize: number | bigint;
}

/** Why a file system has too little room for this process's user (`LOW_SPACE_BYTES`, or 1 % of it if less); null when it has enough. */
export function lacksRoom({ bavail, blocks, bsize }: FileSystemSpace): string | null {
  const available = Number(bavail) * Number(bsize);
  const needed = Math.min(LOW_SPACE_BYTES, (Number(blocks) * Number(bsize)) / 100);
  return available < needed ? `${available} bytes free, below ${Math.round(needed)}` : null;
}

/**
 * Fails when the file system `folder` is on lacks room (`lacksRoom`): a full disk refuses every
 * write (`SQLITE_FULL`, `ENOSPC`) while reads and a rolled-back probe still work, so the
 * readiness probe asks for room itself.
 */
export async function checkRoom(folder: string): Promise<void> {
  const problem = lacksRoom(await statfs(folder));
  if (problem) throw new Error(`${folder}: ${problem}`);
}
