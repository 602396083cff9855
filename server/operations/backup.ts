/**
 * `npm run admin -- backup --to DIR`: a whole, checked copy of an embedded install (SQLite and
 * the files under `$DATA_DIR`), made while the server runs. The folder it writes is described in
 * `backup-folder.ts`; `restore.ts` puts one back.
 */
import { chmod, lstat, mkdir, open, realpath, rm } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../../shared/errors.ts';
import type { Config } from '../config.ts';
import {
  addressOf,
  copyHashed,
  DIR_MODE,
  FILE_MODE,
  folderBeside,
  hashFile,
  MANIFEST_FILE,
  missingOrEmpty,
  moveIntoPlace,
  refuseUnsupported,
  SESSION_SECRET_FILE,
  shortList,
  sizeText,
  type Entry,
  type Manifest,
} from './backup-folder.ts';
import { SQLITE_FILE, sqliteFile } from '../../db/sqlite.ts';
import { syncFolder } from '../sync-folder.ts';
import { dropProcessState, integrityProblem, readContents, snapshotInto } from './sqlite-copy.ts';

export type BackupConfig = Pick<Config, 'dataDir' | 'databaseUrl' | 'storage' | 'sessionSecret' | 'mfaEncryptionKey'>;

export interface BackupSummary {
  dir: string;
  manifest: Manifest;
  /** Unfinished uploads, chunked and tus, left out (`dropProcessState`). */
  unfinishedUploads: number;
  /** Secrets this install takes from its environment, which no backup of the data folder holds. */
  environmentSecrets: string[];
}

/** Whether `target` is `folder` or under it. Outside is `..` or under it: a folder of `folder`'s own may be named `..bak`. */
function isWithin(folder: string, target: string): boolean {
  const inside = path.relative(folder, target);
  return inside !== '..' && !inside.startsWith(`..${path.sep}`) && !path.isAbsolute(inside);
}

/** An absolute path with the symbolic links of its part that exists followed (the rest does not exist yet). */
async function resolvedPath(given: string): Promise<string> {
  const missing: string[] = [];
  for (let at = path.resolve(given); ; at = path.dirname(at)) {
    try {
      return path.join(await realpath(at), ...missing);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if ((code !== 'ENOENT' && code !== 'ENOTDIR') || path.dirname(at) === at) throw error;
      missing.unshift(path.basename(at));
    }
  }
}

/**
 * Writes a backup of the install of `config` into `to`, a new or empty folder.
 *
 * Order, and why nothing the database refers to can be missing. The database is copied first, as
 * of one commit (`snapshotInto`); then every stored file a row of that copy refers to is copied.
 * A stored file is linked into place under its content address before the row that names it
 * commits (`attachments/uploads.ts`: `keep` then `recordUpload`; `attachments/chunked-uploads.ts`: `keepAssembled` then `finish`),
 * so every file the copy names existed when the copy was made. And no stored file is ever
 * removed or replaced: the file store has no delete; `link` refuses to replace a name; the
 * sweeper removes only the chunks of unfinished uploads and temporary files (`chunkedUploads.sweep`),
 * never `files/`; a deleted note keeps its rows and its files; a deleted account keeps its
 * uploads' rows. So every file the copy names is still there when it is copied after it, and a
 * row deleted after the copy cannot take a file away from it. Copying the files first would be
 * wrong: a row committed between the two copies would name a file the backup lacks. Holding the
 * sweeper's lease instead would make a backup wait for a running server's sweeper (up to
 * `SWEEP_LEASE_MS`) for no gain, as long as nothing deletes stored files. Should a clean-up of
 * unreferenced files ever be added, it must leave alone files a backup under way may still copy;
 * until then a file missing is damage, and the backup stops and says so rather than writing a
 * backup that names a file it does not hold. Files written after the copy are not copied (no row
 * of it names them).
 *
 * Everything is written into a folder beside `to` (`<to>.incomplete-<random>`), the manifest
 * last, every file flushed to disk, and the folder renamed to `to` only when whole: a backup cut
 * off is never mistaken for a whole one (no folder `to`; and its leftover has no manifest, which
 * a restore requires). The backup holds password hashes and secrets: folders 0700, files 0600.
 */
export async function backup(config: BackupConfig, to: string, now: () => number = Date.now): Promise<BackupSummary> {
  refuseUnsupported(config, 'backup');
  const target = path.resolve(to);
  const source = sqliteFile(config.dataDir);
  if (!(await lstat(source).catch(() => null))?.isFile()) {
    throw new AppError('ValidationError', `There is no database at ${source}: is DATA_DIR right? (It is ${config.dataDir}.)`);
  }
  // Compared as written and with symbolic links followed: a link can lead into the data folder.
  const resolved = await Promise.all([resolvedPath(config.dataDir), resolvedPath(target)]);
  if (isWithin(config.dataDir, target) || isWithin(...resolved)) {
    throw new AppError('ValidationError', `${target} is inside the data folder: keep backups elsewhere (on another disk or machine), so that what loses the one does not lose the other.`);
  }
  if (!(await missingOrEmpty(target))) {
    throw new AppError('ValidationError', `${target} is not an empty folder: back up into a new folder (one per backup, for example named after the date), or an empty one.`);
  }

  const aside = await folderBeside(target, 'incomplete');
  try {
    const createdAt = new Date(now()).toISOString();
    const database = path.join(aside, SQLITE_FILE);
    await snapshotInto(source, database);
    await chmod(database, FILE_MODE);
    const unfinishedUploads = await dropProcessState(database);
    const problem = await integrityProblem(database);
    if (problem) {
      throw new AppError('ValidationError', `The database at ${source} fails SQLite's integrity check (${problem}): this backup would not restore. The last good backup is the one to keep; see docs/operations.md.`);
    }
    const contents = await readContents(database);
    const databaseEntry = { path: SQLITE_FILE, ...(await flushed(database)) };

    const files = await copyStoredFiles(config.dataDir, aside, contents.files);
    const state: Entry[] = [];
    const secretFile = path.join(config.dataDir, SESSION_SECRET_FILE);
    if ((await lstat(secretFile).catch(() => null))?.isFile()) {
      state.push({ path: SESSION_SECRET_FILE, ...(await copyHashed(secretFile, path.join(aside, SESSION_SECRET_FILE))) });
    }

    const manifest: Manifest = {
      format: 'peer-review-accounts backup',
      version: 1,
      createdAt,
      schema: { latest: contents.migrations.at(-1) ?? null, migrations: contents.migrations },
      profiles: contents.profiles,
      database: databaseEntry,
      files,
      state,
    };
    const handle = await open(path.join(aside, MANIFEST_FILE), 'wx', FILE_MODE);
    try {
      await handle.writeFile(`${JSON.stringify(manifest, null, 2)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    for (const dir of [path.join(aside, 'files', 'pdf'), path.join(aside, 'files', 'attachment'), path.join(aside, 'files'), aside]) await syncFolder(dir);

    await moveIntoPlace(aside, target);
    const environmentSecrets = [...(config.sessionSecret ? ['SESSION_SECRET'] : []), ...(config.mfaEncryptionKey ? ['MFA_ENCRYPTION_KEY'] : [])];
    return { dir: target, manifest, unfinishedUploads, environmentSecrets };
  } catch (error) {
    await rm(aside, { recursive: true, force: true });
    throw error;
  }
}

/** Flushes a file written by another (SQLite's `VACUUM INTO`) to disk, and answers its size and SHA-1. */
async function flushed(file: string): Promise<{ size: number; sha1: string }> {
  const handle = await open(file, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
  return hashFile(file);
}

/**
 * Copies each stored file (`pdf/<sha1>.pdf`, …) from the data folder's `files/` into the backup's,
 * checking that its bytes have the SHA-1 its name says. Stops, naming them, on files missing or
 * damaged: a backup that lacks what its database names would fail its restore.
 */
async function copyStoredFiles(dataDir: string, aside: string, names: string[]): Promise<Entry[]> {
  for (const dir of ['pdf', 'attachment']) await mkdir(path.join(aside, 'files', dir), { recursive: true, mode: DIR_MODE });
  const entries: Entry[] = [];
  const missing: string[] = [];
  const damaged: string[] = [];
  for (const name of names) {
    const from = path.join(dataDir, 'files', ...name.split('/'));
    try {
      const copied = await copyHashed(from, path.join(aside, 'files', ...name.split('/')));
      if (copied.sha1 === addressOf(name)) entries.push({ path: `files/${name}`, ...copied });
      else damaged.push(from);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      missing.push(from);
    }
  }
  const problems = [
    ...(missing.length > 0 ? [`${missing.length} file(s) the database refers to are missing: ${shortList(missing)}`] : []),
    ...(damaged.length > 0 ? [`${damaged.length} file(s) do not hold the bytes their name (their SHA-1) says: ${shortList(damaged)}`] : []),
  ];
  if (problems.length > 0) {
    throw new AppError('ValidationError', `The data folder is damaged, so no backup was written:\n${problems.join('\n')}\nPut those files back from an earlier backup (they never change), then back up again.`);
  }
  return entries;
}

/** What `npm run admin -- backup` prints. */
export function describeBackup(summary: BackupSummary): string[] {
  const { manifest } = summary;
  const bytes = manifest.files.reduce((sum, file) => sum + file.size, 0);
  const parts = [
    `the database (${manifest.profiles} profiles; schema ${manifest.schema.latest ?? 'never migrated'})`,
    `${manifest.files.length} stored files (${sizeText(bytes)}, each checked against its SHA-1)`,
    ...manifest.state.map((entry) => `the ${entry.path} file`),
  ];
  return [
    `Backup written to ${summary.dir}: ${parts.join(', ')}.`,
    ...(summary.unfinishedUploads > 0 ? [`Left out: ${summary.unfinishedUploads} unfinished upload(s), chunked or tus; their clients start them again after a restore.`] : []),
    'It holds password hashes and the install\'s secrets (the session signing secret, two-factor secrets): keep it where only operators can read it (its folders are 0700, its files 0600).',
    ...(summary.environmentSecrets.length > 0
      ? [`Not in it: ${summary.environmentSecrets.join(' and ')}, set in this environment. Keep them with the backup, apart from it: a restore needs the same values.`]
      : []),
  ];
}
