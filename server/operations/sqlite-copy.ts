/**
 * The SQLite side of `backup` and `restore`: a consistent copy of the live database, and what a
 * copy holds. SQLITE-ONLY, like `db/sqlite.ts` (which opens the same file for the server): these
 * work on the file itself, through the sqlite3 driver, without Knex, without migrating and without
 * the server's connection settings, because a copy must never be changed by being looked at.
 */
import sqlite3 from 'sqlite3';
import { storedName } from '../attachments/store/names.ts';

/** One connection to one file, as promises. */
class SqliteFile {
  readonly #db: sqlite3.Database;

  private constructor(db: sqlite3.Database) {
    this.#db = db;
  }

  /** Opens an existing file (never creates one: a missing file is an error, not a new empty database). */
  static open(file: string, mode: 'read' | 'write'): Promise<SqliteFile> {
    return new Promise((resolve, reject) => {
      const db = new sqlite3.Database(file, mode === 'read' ? sqlite3.OPEN_READONLY : sqlite3.OPEN_READWRITE, (error) =>
        error ? reject(error) : resolve(new SqliteFile(db)),
      );
    });
  }

  all<T>(sql: string, params: unknown[] = []): Promise<T[]> {
    return new Promise((resolve, reject) => this.#db.all(sql, params, (error, rows) => (error ? reject(error) : resolve(rows as T[]))));
  }

  run(sql: string, params: unknown[] = []): Promise<void> {
    return new Promise((resolve, reject) => this.#db.run(sql, params, (error) => (error ? reject(error) : resolve())));
  }

  close(): Promise<void> {
    return new Promise((resolve, reject) => this.#db.close((error) => (error ? reject(error) : resolve())));
  }

  async tables(): Promise<Set<string>> {
    return new Set((await this.all<{ name: string }>("select name from sqlite_master where type = 'table'")).map((row) => row.name));
  }
}

async function withFile<T>(file: string, mode: 'read' | 'write', work: (db: SqliteFile) => Promise<T>): Promise<T> {
  const db = await SqliteFile.open(file, mode);
  try {
    return await work(db);
  } finally {
    await db.close();
  }
}

/**
 * Writes a consistent copy of the live database `source` to the new file `target` with
 * `VACUUM INTO`: it reads inside one read transaction, so the copy is the database as of one
 * commit, and in WAL mode (the server's) it neither waits for nor holds up the server's writers.
 * The copy is a single file in rollback-journal mode (no `-wal` beside it); the server turns WAL
 * on again when it opens it.
 */
export async function snapshotInto(source: string, target: string): Promise<void> {
  await withFile(source, 'write', async (db) => {
    // As the server's connections: a checkpoint or recovery under way is waited for, not an error.
    await db.run('PRAGMA busy_timeout = 5000');
    await db.run('VACUUM INTO ?', [target]);
  });
}

/**
 * Takes out of a copy what belongs to the processes of the install it was copied from, which
 * do not run against the copy: the leases they held (the sweeper's and any other, so the
 * restored install's processes need not wait for them to run out), their chunk requests under
 * way, and the unfinished uploads, chunked and tus (a tus part waiting for its final upload
 * included), whose bytes (written outside any transaction, in place) are not part of a backup: a
 * client resuming one after a restore starts it again rather than finding an offset or chunks
 * recorded whose bytes are gone. Answers how many unfinished uploads went.
 */
export async function dropProcessState(file: string): Promise<number> {
  return withFile(file, 'write', async (db) => {
    const tables = await db.tables();
    let unfinished = 0;
    await db.run('BEGIN');
    try {
      if (tables.has('chunked_uploads')) {
        unfinished = Number((await db.all<{ n: number }>("select count(*) as n from chunked_uploads where status <> 'done'"))[0]?.n ?? 0);
        if (tables.has('upload_chunks')) await db.run("delete from upload_chunks where upload_id in (select id from chunked_uploads where status <> 'done')");
        await db.run("delete from chunked_uploads where status <> 'done'");
      }
      if (tables.has('tus_uploads')) {
        unfinished += Number((await db.all<{ n: number }>('select count(*) as n from tus_uploads where url is null'))[0]?.n ?? 0);
        await db.run('delete from tus_uploads where url is null');
        if (tables.has('tus_spans')) await db.run('delete from tus_spans where id not in (select span from tus_uploads where span is not null)');
      }
      if (tables.has('upload_arrivals')) await db.run('delete from upload_arrivals');
      if (tables.has('leases')) await db.run('delete from leases');
      await db.run('COMMIT');
    } catch (error) {
      await db.run('ROLLBACK').catch(() => undefined);
      throw error;
    }
    return Number(unfinished);
  });
}

/** SQLite's own check of every page and index: null when it says `ok`, else what it found. */
export async function integrityProblem(file: string): Promise<string | null> {
  try {
    return await withFile(file, 'read', async (db) => {
      const rows = await db.all<{ integrity_check: string }>('PRAGMA integrity_check');
      const said = rows.map((row) => row.integrity_check);
      return said.length === 1 && said[0] === 'ok' ? null : said.slice(0, 5).join('; ');
    });
  } catch (error) {
    // A file too damaged to open or to check (SQLITE_CORRUPT, SQLITE_NOTADB) is damaged all the same.
    return (error as Error).message;
  }
}

/** What a copy of the database holds that a backup and a restore check. */
export interface DatabaseContents {
  /** The migrations applied to it, by name. */
  migrations: string[];
  /**
   * The stored files its rows refer to, by their name under `files/` (`pdf/<sha1>.pdf`,
   * `attachment/<sha1>.<ext>`): the uploads recorded (`uploads.url`), finished chunked uploads
   * (`chunked_uploads.url`), and every file a note's file fields hold or once held
   * (`note_files.url`, which also indexes venue notes' PDFs). Sorted, each once.
   */
  files: string[];
  /** How many profiles it holds (for the summary printed). */
  profiles: number;
}

/** Reads a copy (read-only): its migrations, the files it refers to, its profile count. */
export async function readContents(file: string): Promise<DatabaseContents> {
  return withFile(file, 'read', async (db) => {
    const tables = await db.tables();
    const column = async (table: string, sql: string) => (tables.has(table) ? (await db.all<{ v: unknown }>(sql)).map((row) => String(row.v)) : []);
    const migrations = await column('knex_migrations', 'select name as v from knex_migrations order by id');
    const urls = [
      ...(await column('uploads', 'select distinct url as v from uploads')),
      ...(await column('chunked_uploads', 'select distinct url as v from chunked_uploads where url is not null')),
      ...(await column('note_files', 'select distinct url as v from note_files')),
    ];
    // A value that is not one of the store's URLs names no stored file (it could not be served either).
    const files = [...new Set(urls.map(storedName).filter((name): name is string => name !== null))].sort();
    const profiles = tables.has('profiles') ? Number((await db.all<{ n: number }>('select count(*) as n from profiles'))[0]?.n ?? 0) : 0;
    return { migrations, files, profiles };
  });
}
