/**
 * `npm run admin -- restore --from DIR`: puts a backup written by `backup.ts` into an empty data
 * folder, checking it on the way: the files are those the manifest lists, each with its SHA-1;
 * SQLite's integrity check passes; every stored file the database refers to is there, with the
 * SHA-1 its name says; and the database is not from a newer version of this service.
 */
import { mkdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../../shared/errors.ts';
import { migrations } from '../../db/migrations/index.ts';
import { migrationNameNow } from '../../db/knex.ts';
import type { Config } from '../config.ts';
import {
  addressOf,
  copyHashed,
  DIR_MODE,
  folderBeside,
  Manifest,
  MANIFEST_FILE,
  missingOrEmpty,
  moveIntoPlace,
  refuseUnsupported,
  SESSION_SECRET_FILE,
  shortList,
  sizeText,
  type Entry,
} from './backup-folder.ts';
import { SQLITE_FILE, sqliteFile } from '../../db/sqlite.ts';
import { syncFolder } from '../sync-folder.ts';
import { integrityProblem, readContents } from './sqlite-copy.ts';

export interface RestoreSummary {
  dataDir: string;
  manifest: Manifest;
  /** This code's migrations the restored database has not had yet: the server runs them when it starts. */
  pending: number;
}

/**
 * Restores the backup in `from` into `config.dataDir`, which must be missing or an empty folder
 * (a restore never mixes with, or replaces, data that is there). Everything is copied into a
 * folder beside it (`<DATA_DIR>.restoring-<random>`) and checked there; only when every check
 * passes is that folder renamed to `DATA_DIR`. On any failure it is removed, and `DATA_DIR` is
 * as it was. Nothing is migrated: the server migrates at start, as after an upgrade.
 */
export async function restore(config: Pick<Config, 'dataDir' | 'databaseUrl' | 'storage'>, from: string): Promise<RestoreSummary> {
  refuseUnsupported(config, 'restore');
  const source = path.resolve(from);
  const target = config.dataDir;
  if (!(await missingOrEmpty(target))) {
    throw new AppError('ValidationError', `DATA_DIR (${target}) is not an empty folder: a restore goes only into a new or empty folder, so that nothing there is lost or mixed in. Move it aside, or set DATA_DIR to a new folder, and run again.`);
  }
  const manifest = await readManifest(source);

  const aside = await folderBeside(target, 'restoring');
  try {
    const database = sqliteFile(aside);
    await copyChecked(source, aside, manifest.database);
    const problem = await integrityProblem(database);
    if (problem) throw damaged(source, `its database fails SQLite's integrity check (${problem})`);
    const contents = await readContents(database);
    const known = new Set(migrations.map((m) => m.name));
    const recorded = contents.migrations.map(migrationNameNow);
    const unknown = recorded.filter((name) => !known.has(name));
    if (unknown.length > 0) {
      throw new AppError('ValidationError', `The backup's database was migrated by a newer version of this service (${shortList(unknown)} unknown here): restore it with that version or a later one.`);
    }

    const listed = new Map(manifest.files.map((entry) => [entry.path, entry]));
    const absent = contents.files.filter((name) => !listed.has(`files/${name}`));
    if (absent.length > 0) throw damaged(source, `its database refers to ${absent.length} file(s) it does not hold: ${shortList(absent)}`);
    for (const dir of ['pdf', 'attachment']) await mkdir(path.join(aside, 'files', dir), { recursive: true, mode: DIR_MODE });
    for (const entry of manifest.files) await copyChecked(source, aside, entry);
    for (const entry of manifest.state) await copyChecked(source, aside, entry);

    for (const dir of [path.join(aside, 'files', 'pdf'), path.join(aside, 'files', 'attachment'), path.join(aside, 'files'), aside]) await syncFolder(dir);
    await moveIntoPlace(aside, target);
    const applied = new Set(recorded);
    return { dataDir: target, manifest, pending: migrations.filter((m) => !applied.has(m.name)).length };
  } catch (error) {
    await rm(aside, { recursive: true, force: true });
    throw error;
  }
}

/**
 * The backup's manifest, checked: its layout version, and that every path in it is one a backup
 * writes (the database, a stored file's content address, the secret file), never one that could
 * reach outside the folders copied from and to.
 */
async function readManifest(source: string): Promise<Manifest> {
  let text: string;
  try {
    text = await readFile(path.join(source, MANIFEST_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    throw new AppError('ValidationError', `${source} has no ${MANIFEST_FILE}: it is not a backup, or a backup cut off before it was finished.`);
  }
  let parsed: Manifest;
  try {
    parsed = Manifest.parse(JSON.parse(text));
  } catch {
    throw new AppError('ValidationError', `${path.join(source, MANIFEST_FILE)} is not a manifest this version can read (damaged, or written by another version).`);
  }
  const wrong = [
    ...(parsed.database.path === SQLITE_FILE ? [] : [parsed.database.path]),
    ...parsed.files.filter((entry) => !entry.path.startsWith('files/') || addressOf(entry.path.slice('files/'.length)) === null).map((entry) => entry.path),
    ...parsed.state.filter((entry) => entry.path !== SESSION_SECRET_FILE).map((entry) => entry.path),
  ];
  if (wrong.length > 0) throw damaged(source, `its manifest names files a backup never holds: ${shortList(wrong)}`);
  const seen = new Set<string>();
  const twice = new Set<string>();
  for (const { path: named } of [parsed.database, ...parsed.files, ...parsed.state]) (seen.has(named) ? twice : seen).add(named);
  if (twice.size > 0) throw damaged(source, `its manifest names a file twice: ${shortList([...twice])}`);
  return parsed;
}

/**
 * Copies one file of the backup into the folder being restored, checking it is the file the
 * manifest lists (size and SHA-1) and, for a stored file, that its bytes have the SHA-1 its name
 * says.
 */
async function copyChecked(source: string, aside: string, entry: Entry): Promise<void> {
  const parts = entry.path.split('/');
  let copied: { size: number; sha1: string };
  try {
    copied = await copyHashed(path.join(source, ...parts), path.join(aside, ...parts));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    throw damaged(source, `${entry.path} is missing`);
  }
  const address = entry.path.startsWith('files/') ? addressOf(entry.path.slice('files/'.length)) : entry.sha1;
  if (copied.size !== entry.size || copied.sha1 !== entry.sha1 || copied.sha1 !== address) {
    throw damaged(source, `${entry.path} is not the file the backup wrote (${copied.sha1 !== entry.sha1 ? 'its SHA-1 differs' : 'its size differs'})`);
  }
}

function damaged(source: string, what: string): AppError {
  return new AppError('ValidationError', `The backup in ${source} is damaged: ${what}. Nothing was restored; restore an earlier backup.`);
}

/** What `npm run admin -- restore` prints. */
export function describeRestore(summary: RestoreSummary): string[] {
  const { manifest } = summary;
  const bytes = manifest.files.reduce((sum, file) => sum + file.size, 0);
  const parts = [
    `the database (${manifest.profiles} profiles; integrity check ok)`,
    `${manifest.files.length} stored files (${sizeText(bytes)}, each checked against its SHA-1)`,
    ...manifest.state.map((entry) => `the ${entry.path} file`),
  ];
  return [
    `Restored the backup of ${manifest.createdAt} into ${summary.dataDir}: ${parts.join(', ')}.`,
    summary.pending > 0
      ? `Its schema is ${manifest.schema.latest ?? 'empty'}; this version has ${summary.pending} newer migration(s), which the server runs when it starts.`
      : `Its schema is ${manifest.schema.latest ?? 'empty'}, this version's latest.`,
    `Start the server with DATA_DIR=${summary.dataDir}, and the same SESSION_SECRET and MFA_ENCRYPTION_KEY as the install had, if it set them.`,
  ];
}
