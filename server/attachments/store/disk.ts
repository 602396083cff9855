/**
 * Small helpers for files on this machine's disk, shared by the temporary folder, the local back
 * end and its slot writer: removing a file that may be gone already, and writing a buffer whole
 * (a write may take fewer bytes than it is given).
 */
import { unlink, type FileHandle } from 'node:fs/promises';

/** How much the local store moves through one buffer at once: a chunk file read by the assembly, a slot's writes. */
export const ASSEMBLY_BUFFER_BYTES = 1024 * 1024;

/** Writes every byte of `bytes` at the file's position (a write may take fewer than it is given). */
export async function writeAll(handle: FileHandle, bytes: Buffer): Promise<void> {
  for (let offset = 0; offset < bytes.length; ) {
    offset += (await handle.write(bytes, offset, bytes.length - offset)).bytesWritten;
  }
}

/** Removes a file; one gone already (removed by another path, or never made) is no error. */
export async function removeQuietly(file: string): Promise<void> {
  await unlink(file).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
  });
}
