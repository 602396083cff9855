/**
 * What a backup folder is, shared by `backup.ts` (which writes one) and `restore.ts` (which reads
 * one): its layout and manifest, copying a file while hashing it, and the folder rules (new or
 * empty targets, work done aside and renamed into place, owner-only modes).
 *
 * A backup folder:
 *
 *   manifest.json       written last: a folder without it is not a whole backup
 *   service.sqlite      the database, as of one commit
 *   files/pdf/<sha1>.pdf, files/attachment/<sha1>.<ext>
 *                       every stored file a row of that database refers to
 *   session-secret      only if the data folder still had one (an install from before the
 *                       secret moved into the database, not started since)
 */
import { randomBytes, createHash } from 'node:crypto';
import { lstat, mkdir, open, readdir, rename } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { AppError } from '../../shared/errors.ts';
import type { Config } from '../config.ts';
import { SQLITE_FILE, sqliteFile } from '../../db/sqlite.ts';
import { syncFolder } from '../sync-folder.ts';

export const MANIFEST_FILE = 'manifest.json';
/** The older installs' secret file (`accounts/session-tokens.ts` adopts it into the database at start). */
export const SESSION_SECRET_FILE = 'session-secret';
/** Folders and files of a backup, and of a restored data folder, are the owner's alone: they hold password hashes and secrets. */
export const DIR_MODE = 0o700;
export const FILE_MODE = 0o600;
const COPY_BUFFER_BYTES = 1024 * 1024;

/** A file of the backup: where it is in the folder, and what it holds. */
const Entry = z.strictObject({ path: z.string(), size: z.int().min(0), sha1: z.string().regex(/^[0-9a-f]{40}$/) });
export type Entry = z.infer<typeof Entry>;

/**
 * The manifest. `version` is this layout's; a restore refuses one it does not know. `schema` is
 * the database's: the migrations applied to it (`latest` is the newest of them), which a restore
 * compares with its own code's.
 */
export const Manifest = z.strictObject({
  format: z.literal('peer-review-accounts backup'),
  version: z.literal(1),
  createdAt: z.iso.datetime(),
  schema: z.strictObject({ latest: z.string().nullable(), migrations: z.array(z.string()) }),
  profiles: z.int().min(0),
  database: Entry,
  files: z.array(Entry),
  state: z.array(Entry),
});
export type Manifest = z.infer<typeof Manifest>;

/** A stored file's name below `files/` (`pdf/<sha1>.pdf`, `attachment/<sha1>.<ext>`), as `attachments/store/names.ts` makes them. */
const STORED_NAME = /^(?:pdf\/[0-9a-f]{40}\.pdf|attachment\/[0-9a-f]{40}\.[A-Za-z0-9]{1,10})$/;

/** The SHA-1 a stored file's name says its bytes have (its content address); null for a name that is not one. */
export function addressOf(name: string): string | null {
  return STORED_NAME.test(name) ? name.slice(name.indexOf('/') + 1, name.indexOf('/') + 41) : null;
}

/**
 * Refuses an install this command cannot copy whole, saying what to use instead, before anything
 * is opened: a PostgreSQL database (`DATABASE_URL`) or files in a bucket (`STORAGE_URL`). A
 * backup of the SQLite file alone with the files in a bucket would name files it does not hold,
 * so that is refused too, with both halves of what to do.
 */
export function refuseUnsupported(config: Pick<Config, 'databaseUrl' | 'storage' | 'dataDir'>, verb: 'backup' | 'restore'): void {
  const postgres = config.databaseUrl !== undefined;
  const bucket = config.storage.kind === 's3';
  if (!postgres && !bucket) return;
  const lines = [`${verb} copies an embedded install (SQLite and files under DATA_DIR) only; this one keeps its data elsewhere:`];
  if (postgres) {
    lines.push(
      verb === 'backup'
        ? '- the database is PostgreSQL (DATABASE_URL): back it up with pg_dump (pg_dump --format=custom --file=accounts.dump "$DATABASE_URL") or your managed database\'s snapshots and point-in-time recovery.'
        : '- the database is PostgreSQL (DATABASE_URL): restore a pg_dump with pg_restore (pg_restore --dbname="$DATABASE_URL" accounts.dump) or from your managed database\'s snapshots.',
    );
  }
  if (bucket) {
    lines.push('- the files are in a bucket (STORAGE_URL): keep them with the bucket\'s versioning and replication to another bucket; stored objects are never replaced or removed.');
    if (!postgres) lines.push(`- the database is SQLite: copy it with sqlite3 ${sqliteFile(config.dataDir)} "VACUUM INTO '/backups/${SQLITE_FILE}'" (safe while the server runs).`);
  } else {
    lines.push(
      verb === 'backup'
        ? `- the files are under ${path.join(config.dataDir, 'files')}: copy that folder after the database (stored files are never changed or removed, so a copy made after the dump holds every file it refers to).`
        : `- the files: copy the saved files folder back to ${path.join(config.dataDir, 'files')}.`,
    );
  }
  lines.push('See docs/operations.md, "Backups".');
  throw new AppError('ValidationError', lines.join('\n'));
}

/** Whether `dir` is missing or an empty folder (what a backup target and a restore target must be). */
export async function missingOrEmpty(dir: string): Promise<boolean> {
  const found = await lstat(dir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw error;
  });
  if (!found) return true;
  return found.isDirectory() && (await readdir(dir)).length === 0;
}

/**
 * A new folder beside `dir` (same parent, so the final rename is one atomic step on one file
 * system), named so that nobody takes it for the finished thing: `<dir>.<label>-<random>`.
 */
export async function folderBeside(dir: string, label: string): Promise<string> {
  await mkdir(path.dirname(dir), { recursive: true });
  const aside = `${dir}.${label}-${randomBytes(4).toString('hex')}`;
  await mkdir(aside, { mode: DIR_MODE });
  return aside;
}

/**
 * Copies `from` to the new file `to` (created exclusively, owner-only, flushed to disk), hashing
 * the bytes as they are read: what was written, its size and SHA-1.
 */
export async function copyHashed(from: string, to: string): Promise<{ size: number; sha1: string }> {
  const source = await open(from, 'r');
  try {
    const target = await open(to, 'wx', FILE_MODE);
    try {
      const hash = createHash('sha1');
      const buffer = Buffer.allocUnsafe(COPY_BUFFER_BYTES);
      let size = 0;
      for (;;) {
        const { bytesRead } = await source.read(buffer, 0, buffer.length, null);
        if (bytesRead === 0) break;
        const bytes = buffer.subarray(0, bytesRead);
        hash.update(bytes);
        for (let offset = 0; offset < bytes.length; ) offset += (await target.write(bytes, offset, bytes.length - offset)).bytesWritten;
        size += bytesRead;
      }
      await target.sync();
      return { size, sha1: hash.digest('hex') };
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}

/** The size and SHA-1 of a file, read through once. */
export async function hashFile(file: string): Promise<{ size: number; sha1: string }> {
  const handle = await open(file, 'r');
  try {
    const hash = createHash('sha1');
    const buffer = Buffer.allocUnsafe(COPY_BUFFER_BYTES);
    let size = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
      size += bytesRead;
    }
    return { size, sha1: hash.digest('hex') };
  } finally {
    await handle.close();
  }
}

/** A few items of a long list, for a message. */
export function shortList(items: string[]): string {
  return items.length <= 5 ? items.join(', ') : `${items.slice(0, 5).join(', ')} and ${items.length - 5} more`;
}

/**
 * Renames the finished folder to `target` (replacing it when it is an empty folder) and flushes
 * the rename. A target that got something meanwhile, or is a mount point (a rename cannot replace
 * it), is refused.
 */
export async function moveIntoPlace(aside: string, target: string): Promise<void> {
  try {
    await rename(aside, target);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOTEMPTY' || code === 'EEXIST') throw new AppError('ValidationError', `${target} is no longer empty (something was written into it meanwhile); nothing was changed there.`);
    if (code === 'EBUSY' || code === 'EXDEV' || code === 'EPERM') {
      throw new AppError('ValidationError', `${target} cannot be replaced (${code}: a mount point?): give a new folder inside it instead; nothing was changed there.`);
    }
    throw error;
  }
  await syncFolder(path.dirname(target));
}

/** Bytes for people: `12.3 MB`. */
export function sizeText(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = -1;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}
