/**
 * `TemporaryFolder`, this machine's `$DATA_DIR/tmp`, used by both back ends: a request's file is
 * received there first, because it is the request's alone and is checked there before anything
 * is stored. Its files are named after their process so that a start after a crash can clear
 * what a stopped process left without touching what a running one is writing.
 */
import { randomUUID } from 'node:crypto';
import { access, constants, mkdir, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ownerIsGone, PROCESS_OWNER } from '../owners.ts';
import { removeQuietly } from './disk.ts';
import type { Received, ReceiveOptions } from './file-store.ts';
import { Meter } from './meter.ts';
import { StagedFileWriter } from './staged-writer.ts';

/**
 * This machine's temporary folder (`$DATA_DIR/tmp`): files being received, and the local store's
 * assemblies. Each is named after the process writing it (`<owner>~<uuid>`, see ../owners.ts), so
 * that a process starting after a crash can tell what is left over from what another is writing.
 */
export class TemporaryFolder {
  readonly #dir: string;
  readonly #owner: string;

  constructor(dataDir: string, owner = PROCESS_OWNER) {
    this.#dir = path.join(dataDir, 'tmp');
    this.#owner = owner;
  }

  async init(): Promise<void> {
    await mkdir(this.#dir, { recursive: true });
  }

  /** Throws unless the folder is there and writable. */
  async check(): Promise<void> {
    await access(this.#dir, constants.W_OK);
  }

  /** A new temporary file's path. */
  newPath(): string {
    return path.join(this.#dir, `${this.#owner}~${randomUUID()}`);
  }

  /**
   * Streams `source` into a new temporary file (opened exclusively), hashing and counting as the
   * bytes arrive. Past `maxBytes` it stops with a 413 and the temporary file is removed; so it is
   * when the source fails (the client went away). `hash: false` skips the SHA-1 (5 ms for a 5 MB
   * chunk, whose own hash nothing uses) and answers `sha1: ''`.
   */
  async receive(source: Readable, maxBytes: number, opts: ReceiveOptions = {}): Promise<Received> {
    const file = this.newPath();
    const meter = new Meter(maxBytes, opts.continueHash ?? opts.hash !== false, !opts.continueHash && opts.hash !== false);
    try {
      await pipeline(source, meter, new StagedFileWriter(file));
    } catch (error) {
      await removeQuietly(file);
      throw error;
    }
    return { path: file, ...meter.result(), ...(opts.continueHash ? { continued: opts.continueHash } : {}) };
  }

  /** Temporary files older than `olderThan` (ms since the epoch), left by a crash. */
  async sweep(olderThan: number): Promise<void> {
    for (const name of await readdir(this.#dir).catch(() => [] as string[])) {
      const file = path.join(this.#dir, name);
      const info = await stat(file).catch(() => null);
      if (info && info.mtimeMs < olderThan) await removeQuietly(file);
    }
  }

  /**
   * At start: removes the temporary files of processes that stopped (a crash in the middle of
   * receiving or assembling), and unnamed ones from before `startedAt`. Another running
   * process's files, and those of another machine sharing the folder, are left alone (the sweep
   * removes them once a day old).
   */
  async removeOfStopped(startedAt: number): Promise<number> {
    let removed = 0;
    for (const name of await readdir(this.#dir).catch(() => [] as string[])) {
      const file = path.join(this.#dir, name);
      const owner = name.includes('~') ? name.slice(0, name.indexOf('~')) : null;
      if (owner !== null ? !ownerIsGone(owner) : ((await stat(file).catch(() => null))?.mtimeMs ?? Infinity) >= startedAt) continue;
      await removeQuietly(file);
      removed += 1;
    }
    return removed;
  }
}
