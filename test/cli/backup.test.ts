/**
 * `npm run admin -- backup` and `restore`: a backup taken while the server takes writes restores
 * into a fresh folder where everything made before it is there; a damaged backup, or a folder
 * that is not empty, is refused with the target left as it was; PostgreSQL and S3 installs are
 * told what to use instead.
 */
import { cp, mkdir, readdir, readFile, rm, stat, symlink, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sqlite3 from 'sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.ts';
import { backup } from '../../server/operations/backup.ts';
import { restore } from '../../server/operations/restore.ts';
import { pdfBytes, sha1, SUBMISSION, submitPaper, venueWithAuthor } from '../attachments/helpers.ts';
import { cookieHeader } from '../helpers/cookies.ts';
import { TEST_POSTGRES_URL } from '../helpers/database.ts';
import { Client, sendMultipart } from '../helpers/http.ts';
import { runAdmin } from '../helpers/admin.ts';
import { encodeMetadata, metadataFor, tusRequest } from '../attachments/tus-helpers.ts';
import { startServer, tempDir, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';

/** `npm run admin` is a Node process of its own: about a second to start, far more on a loaded machine. */
const LONG = { timeout: 120_000 };

const admin = runAdmin;

/** What a data folder's parent holds: a restore or backup that failed leaves no folder of its own beside the target. */
async function entries(dir: string): Promise<string[]> {
  return (await readdir(dir).catch(() => [] as string[])).sort();
}

const sqliteConfig = (dataDir: string) => loadConfig({ DATA_DIR: dataDir });

describe.skipIf(TEST_POSTGRES_URL !== undefined)('backup and restore of an embedded install (SQLite; in the PostgreSQL run its database is pg_dump\'s, see the refusals below)', () => {
  let root: string;
  let server: TestServer;
  /** The backup the first test writes, which the others damage copies of. */
  let saved: string;

  beforeAll(async () => {
    root = await tempDir('backup-test-');
    server = await startServer({}, path.join(root, 'data'));
    saved = path.join(root, 'backup');
  });
  afterAll(async () => {
    await server?.close();
    await rm(root, { recursive: true, force: true });
  });

  it('a backup taken under a write load restores into a fresh folder: every earlier account signs in, every file reads back identical', LONG, async () => {
    const { author, authorId } = await venueWithAuthor(server);
    const people = await Promise.all([1, 2, 3].map(() => createActiveUser(server)));
    const papers = [pdfBytes(3000), pdfBytes(70_000), pdfBytes(1_500_000)];
    const upload = (data: Uint8Array) => sendMultipart<{ url: string }>(author, 'PUT', '/attachment', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'p.pdf', data }, { 'cf-turnstile-token': 'dev-ok' });
    for (const data of papers) expect((await upload(data)).status).toBe(200);
    const submitted = pdfBytes(5000);
    const { note } = await submitPaper(author, authorId, submitted);
    expect(note.status).toBe(200);
    // A file sent in chunks, and one whose chunks are not all in: the backup holds the first, and leaves the second out.
    const chunked = pdfBytes(20_000);
    const chunk = (clientUploadId: string, chunkIndex: number, data: Uint8Array) =>
      sendMultipart(author, 'PUT', '/attachment/chunk', { name: 'pdf', invitationId: SUBMISSION, clientUploadId, chunkIndex, totalChunks: 2 }, { filename: 'p.pdf', data });
    expect((await chunk('whole', 0, chunked.subarray(0, 10_000))).status).toBe(200);
    expect((await chunk('whole', 1, chunked.subarray(10_000))).body).toEqual({ url: `/pdf/${sha1(chunked)}.pdf` });
    expect((await chunk('half', 0, pdfBytes(10_000))).status).toBe(200);
    // And a tus upload half sent: left out too, or a client resuming it after a restore would
    // find its offset recorded and its bytes gone.
    const authorToken = (await loggedIn(server, (await server.service.services.profiles.listUsers()).find((user) => user.id === authorId)?.emails[0] ?? 'the author')).token;
    const created = await tusRequest(server, 'POST', '/attachment/tus', { token: authorToken, headers: { 'Upload-Length': '20000', 'Upload-Metadata': encodeMetadata(metadataFor(SUBMISSION, 'pdf', 'p.pdf')) } });
    expect(created.status).toBe(201);
    expect((await tusRequest(server, 'PATCH', created.headers.get('location') ?? '', { token: authorToken, headers: { 'Upload-Offset': '0' }, body: pdfBytes(20_000).subarray(0, 10_000) })).status).toBe(204);
    const registered = new Client(server.url);
    const signUp = (n: number) => registered.post('/register', { token: 'dev-ok', password: PASSWORD, fullname: 'Load Person', email: `load${n}@example.org` });
    expect((await signUp(0)).status).toBe(200);
    const { token } = await loggedIn(server, people[0]?.email ?? '(none)');

    // The write load: sign-ups and uploads over HTTP, all through the backup.
    let stopped = false;
    let writes = 0;
    const signUps = (async () => {
      // The address may sign up 20 times an hour: one went above.
      for (let n = 1; n < 20 && !stopped; n += 1) {
        expect((await signUp(n)).status).toBe(200);
        writes += 1;
      }
    })();
    const uploads = (async () => {
      while (!stopped) {
        expect((await upload(pdfBytes(50_000))).status).toBe(200);
        writes += 1;
      }
    })();
    const started = writes;
    await expect.poll(() => writes > started, { timeout: 60_000 }).toBe(true);
    const made = await admin({ DATA_DIR: server.dataDir }, 'backup', '--to', saved);
    stopped = true;
    await Promise.all([signUps, uploads]);
    expect(made.stderr).toBe('');
    expect(made.code).toBe(0);
    expect(made.stdout).toMatch(/^Backup written to .*backup: the database \(\d+ profiles; schema \w+\), \d+ stored files \(.*, each checked against its SHA-1\)\.\n/);
    expect(made.stdout).toContain('Left out: 2 unfinished upload(s), chunked or tus');
    expect(made.stdout).toContain('It holds password hashes');

    // Only its owner may read it.
    expect((await stat(saved)).mode & 0o777).toBe(0o700);
    const manifest = JSON.parse(await readFile(path.join(saved, 'manifest.json'), 'utf8')) as { files: Array<{ path: string; sha1: string }> };
    for (const file of ['manifest.json', 'service.sqlite', ...manifest.files.map((f) => f.path)]) expect((await stat(path.join(saved, file))).mode & 0o777).toBe(0o600);
    for (const data of [...papers, submitted, chunked]) expect(manifest.files.map((f) => f.path)).toContain(`files/pdf/${sha1(data)}.pdf`);
    expect(await entries(root)).toEqual(['backup', 'data']);

    const dataDir = path.join(root, 'restored');
    const restored = await admin({ DATA_DIR: dataDir }, 'restore', '--from', saved);
    expect(restored.stderr).toBe('');
    expect(restored.code).toBe(0);
    expect(restored.stdout).toMatch(/^Restored the backup of .* into .*restored: the database \(\d+ profiles; integrity check ok\), \d+ stored files/);

    // At the original's address, as a restored install would be: its tokens name it as their issuer.
    const copy = await startServer({ BASE_URL: server.url }, dataDir);
    try {
      for (const person of people) expect((await new Client(copy.url).post('/login', { id: person.email, password: PASSWORD })).status).toBe(200);
      expect((await copy.service.services.profiles.listUsers()).flatMap((user) => user.emails)).toContain('load0@example.org');
      // A session issued before the backup is still good: its row and the signing secret came along.
      const before = new Client(copy.url);
      before.bearer = token;
      expect((await before.get('/sessions')).status).toBe(200);

      const authorEmail = (await copy.service.services.profiles.listUsers()).find((user) => user.id === authorId)?.emails[0];
      const reader = (await loggedIn(copy, authorEmail ?? 'the author')).client;
      const read = async (where: string) => {
        const res = await fetch(`${copy.url}${where}`, { headers: { cookie: cookieHeader(reader) } });
        expect(res.status).toBe(200);
        return Buffer.from(await res.arrayBuffer());
      };
      for (const data of [...papers, chunked]) expect((await read(`/pdf/${sha1(data)}.pdf`)).equals(Buffer.from(data))).toBe(true);
      expect((await read(`/pdf?id=${note.body.id}`)).equals(Buffer.from(submitted))).toBe(true);
      // The unfinished upload is not there to resume: its chunks were not copied.
      expect(await copy.service.db('chunked_uploads').whereNot({ status: 'done' }).count({ n: '*' })).toEqual([{ n: 0 }]);
      expect(await copy.service.db('tus_uploads').whereNull('url').count({ n: '*' })).toEqual([{ n: 0 }]);
    } finally {
      await copy.close();
    }
  });

  it('restore refuses a folder that is not empty, a changed file, a damaged database and a newer schema, and leaves DATA_DIR as it was', async () => {
    const target = path.join(root, 'target');
    const tries = path.join(root, 'tries');
    await mkdir(tries);
    const damaged = async (name: string, damage: (dir: string) => Promise<void>) => {
      const dir = path.join(tries, name);
      await cp(saved, dir, { recursive: true });
      await damage(dir);
      return dir;
    };
    /** Rewrites the manifest's record of the database, as if the backup had been written so. */
    const rerecord = async (dir: string) => {
      const file = path.join(dir, 'manifest.json');
      const manifest = JSON.parse(await readFile(file, 'utf8')) as { database: { size: number; sha1: string } };
      const bytes = await readFile(path.join(dir, 'service.sqlite'));
      manifest.database = { ...manifest.database, size: bytes.length, sha1: sha1(bytes) };
      await writeFile(file, JSON.stringify(manifest));
    };
    const manifest = JSON.parse(await readFile(path.join(saved, 'manifest.json'), 'utf8')) as { files: Array<{ path: string }> };
    const aFile = manifest.files[0]?.path ?? '(none)';
    expect(aFile).toMatch(/^files\/pdf\/[0-9a-f]{40}\.pdf$/);

    const changed = await damaged('changed', async (dir) => {
      const bytes = await readFile(path.join(dir, aFile));
      bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 1, bytes.length - 1);
      await writeFile(path.join(dir, aFile), bytes);
    });
    const cut = await damaged('cut', async (dir) => truncate(path.join(dir, 'service.sqlite'), 8192));
    const corrupt = await damaged('corrupt', async (dir) => {
      await truncate(path.join(dir, 'service.sqlite'), 8192);
      await rerecord(dir);
    });
    const newer = await damaged('newer', async (dir) => {
      const db = new sqlite3.Database(path.join(dir, 'service.sqlite'));
      await new Promise<void>((resolve, reject) => db.run("insert into knex_migrations (name, batch, migration_time) values ('29990101000000_from_the_future', 99, 0)", (e) => (e ? reject(e) : resolve())));
      await new Promise<void>((resolve) => db.close(() => resolve()));
      await rerecord(dir);
    });
    const unfinished = await damaged('unfinished', async (dir) => rm(path.join(dir, 'manifest.json')));
    const listedTwice = await damaged('twice', async (dir) => {
      const file = path.join(dir, 'manifest.json');
      const written = JSON.parse(await readFile(file, 'utf8')) as { files: unknown[] };
      written.files = [...written.files, written.files[0]];
      await writeFile(file, JSON.stringify(written));
    });

    const refusals: Array<[string, RegExp]> = [
      [changed, new RegExp(`damaged: ${aFile} is not the file the backup wrote \\(its SHA-1 differs\\)`)],
      [cut, /damaged: service\.sqlite is not the file the backup wrote/],
      [corrupt, /damaged: its database fails SQLite's integrity check/],
      [newer, /migrated by a newer version of this service \(29990101000000_from_the_future unknown here\)/],
      [unfinished, /has no manifest\.json: it is not a backup, or a backup cut off before it was finished/],
      [listedTwice, new RegExp(`damaged: its manifest names a file twice: ${aFile}`)],
    ];
    for (const [from, reason] of refusals) {
      await expect(restore(sqliteConfig(target), from)).rejects.toThrow(reason);
      expect(await entries(root)).not.toContain('target');
      expect((await entries(root)).filter((name) => name.includes('.restoring-'))).toEqual([]);
    }
    // An empty folder stays empty after a refusal; one with anything in it is refused outright.
    await mkdir(target);
    await expect(restore(sqliteConfig(target), changed)).rejects.toThrow(/SHA-1 differs/);
    expect(await entries(target)).toEqual([]);
    await writeFile(path.join(target, 'notes.txt'), 'mine');
    await expect(restore(sqliteConfig(target), saved)).rejects.toThrow(/DATA_DIR \(.*target\) is not an empty folder/);
    expect(await entries(target)).toEqual(['notes.txt']);
    expect(await readFile(path.join(target, 'notes.txt'), 'utf8')).toBe('mine');
  });

  it('backup refuses a folder that is not empty, and one inside the data folder', async () => {
    await expect(backup(server.config, saved)).rejects.toThrow(/backup.* is not an empty folder: back up into a new folder/);
    await expect(backup(server.config, path.join(server.dataDir, 'backups'))).rejects.toThrow(/is inside the data folder/);
    // A name that only starts with `..` is still a folder of the data folder's.
    await expect(backup(server.config, path.join(server.dataDir, '..backups'))).rejects.toThrow(/is inside the data folder/);
    await expect(backup(server.config, server.dataDir)).rejects.toThrow(/is inside the data folder/);
    // A symbolic link outside that leads into the data folder.
    const link = path.join(root, 'link-into-data');
    await symlink(server.dataDir, link);
    await expect(backup(server.config, path.join(link, 'backups', 'b1'))).rejects.toThrow(/is inside the data folder/);
    expect(await entries(server.dataDir)).not.toContain('backups');
    expect((await entries(root)).filter((name) => name.includes('.incomplete-'))).toEqual([]);
  });
});

describe('backup and restore on PostgreSQL or S3', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir('backup-refusal-');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('say what to use instead (pg_dump, the bucket\'s versioning), write nothing and fail', LONG, async () => {
    const to = path.join(dir, 'backup');
    // Nothing is opened: the address is never connected to.
    const postgres = { DATA_DIR: path.join(dir, 'data'), DATABASE_URL: 'postgres://backup-test.invalid:5432/none' };
    const res = await admin(postgres, 'backup', '--to', to);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toContain('error: backup copies an embedded install (SQLite and files under DATA_DIR) only');
    expect(res.stderr).toContain('the database is PostgreSQL (DATABASE_URL): back it up with pg_dump');
    expect(res.stderr).toContain('copy that folder after the database');

    const bucket = { DATA_DIR: path.join(dir, 'data'), STORAGE_URL: 's3://backup-test-bucket?endpoint=http://127.0.0.1:1&forcePathStyle=true' };
    await expect(backup(loadConfig(bucket), to)).rejects.toThrow(/files are in a bucket \(STORAGE_URL\): keep them with the bucket's versioning[^]*the database is SQLite: copy it with sqlite3 .* "VACUUM INTO/);
    await expect(restore(loadConfig({ ...postgres, MAIL_OUTBOX: 'on' }), to)).rejects.toThrow(/restore a pg_dump with pg_restore/);
    await expect(restore(loadConfig({ ...postgres, ...bucket, MAIL_OUTBOX: 'on' }), to)).rejects.toThrow(/pg_restore[^]*bucket's versioning/);
    expect(await entries(dir)).toEqual([]);
  });
});
