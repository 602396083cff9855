/**
 * The failure: the server was killed (SIGKILL, a crash, the OOM killer) while it assembled a
 * chunked upload. After a restart on the same data folder, re-sending the last chunk waited a
 * minute and answered `state: "assembling"`: the upload stayed claimed by the dead process for
 * ten minutes, and its half-written temporary file stayed forever. Now each assembly records the
 * process doing it; at start, and whenever a chunk finds an assembly whose process is gone, it
 * is redone at once, and temporary files of stopped processes are removed at start. The same
 * restart after a kill during a burst of sign-ups leaves a sound database.
 */
import type { ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import sqlite3 from 'sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUBMISSION, VENUE } from '../attachments/helpers.ts';
import { cookieHeader } from '../helpers/cookies.ts';
import { Client, sendMultipart } from '../helpers/http.ts';
import { openTestDatabase, testDatabaseEnv, TEST_POSTGRES_URL } from '../helpers/database.ts';
import { freePort, killHard, startOnPort } from '../helpers/processes.ts';
import { startServer, tempDir } from '../helpers/server.ts';
import { createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';
import { venueConfig } from '../helpers/venue.ts';

const MB = 1024 * 1024;
const CHUNK = 5 * MB;
const CHUNKS = 8;

let dir: string;
let port: number;
let url: string;
let authorEmail: string;
let child: ChildProcess | null = null;

/**
 * `node server/main.ts` on the data folder, answering once it listens. One a failed test left
 * running is killed first: it would hold the port.
 */
async function startChild(): Promise<ChildProcess> {
  if (child) await kill(child);
  const proc = await startOnPort(dir, port);
  child = proc;
  return proc;
}

async function kill(proc: ChildProcess): Promise<void> {
  await killHard(proc);
  child = null;
}

/** A look at the database from outside the server, on one connection until `close`. */
interface Reader {
  all<T>(sql: string): Promise<T[]>;
  close(): Promise<void>;
}

async function openReader(): Promise<Reader> {
  if (TEST_POSTGRES_URL) {
    const client = new pg.Client({ connectionString: (await testDatabaseEnv(dir)).DATABASE_URL });
    // Ended by the server's side (the folder's database dropped after a failure) is not an error here.
    client.on('error', () => undefined);
    await client.connect();
    return { all: async <T>(sql: string) => (await client.query(sql)).rows as T[], close: () => client.end() };
  }
  const db = new sqlite3.Database(path.join(dir, 'service.sqlite'), sqlite3.OPEN_READONLY);
  db.configure('busyTimeout', 5000);
  return {
    all: <T>(sql: string) => new Promise<T[]>((resolve, reject) => db.all(sql, (err, rows) => (err ? reject(err) : resolve(rows as T[])))),
    close: () => new Promise<void>((resolve) => db.close(() => resolve())),
  };
}

/** One read-only statement on a connection of its own. */
async function query<T>(sql: string): Promise<T[]> {
  const reader = await openReader();
  try {
    return await reader.all<T>(sql);
  } finally {
    await reader.close();
  }
}

/**
 * The database's own consistency check: SQLite's `integrity_check`; on PostgreSQL, amcheck's
 * check of every B-tree index of the service's tables against its table (an error if one is
 * corrupt), answered in SQLite's words.
 */
async function integrity(): Promise<Array<{ integrity_check: string }>> {
  if (!TEST_POSTGRES_URL) return query<{ integrity_check: string }>('PRAGMA integrity_check');
  const db = await openTestDatabase(dir);
  try {
    await db.raw('create extension if not exists amcheck');
    const { rows } = (await db.raw(
      `select c.relname as index, bt_index_check(c.oid, true) from pg_index i join pg_class c on c.oid = i.indexrelid
        join pg_am a on a.oid = c.relam where a.amname = 'btree' and c.relnamespace = current_schema()::regnamespace`,
    )) as { rows: unknown[] };
    expect(rows.length).toBeGreaterThan(5);
    return [{ integrity_check: 'ok' }];
  } finally {
    await db.destroy();
  }
}
const temporaryFiles = async () => readdir(path.join(dir, 'tmp')).catch(() => [] as string[]);

beforeAll(async () => {
  dir = await tempDir();
  port = await freePort();
  url = `http://127.0.0.1:${port}`;
  // The venue and its author, made in-process on the same folder, before the real server runs.
  const setup = await startServer({}, dir);
  const admin = await createActiveUser(setup, { role: 'superuser', fullname: 'Crash Admin' });
  const root = (await loggedIn(setup, admin.email)).client;
  expect((await root.post('/venues', venueConfig(VENUE))).status).toBe(200);
  authorEmail = (await createActiveUser(setup, { fullname: 'Crash Author' })).email;
  await setup.close();
});
afterAll(async () => {
  if (child) await kill(child);
  await rm(dir, { recursive: true, force: true });
});

async function signIn(): Promise<Client> {
  const client = new Client(url);
  const res = await client.post('/login', { id: authorEmail, password: PASSWORD });
  expect(res.status).toBe(200);
  return client;
}

function sendChunk(client: Client, clientUploadId: string, data: Buffer, index: number) {
  return sendMultipart(client, 'PUT', '/attachment/chunk', { name: 'pdf', invitationId: SUBMISSION, clientUploadId, chunkIndex: index, totalChunks: CHUNKS }, {
    filename: 'paper.pdf',
    data: data.subarray(index * CHUNK, (index + 1) * CHUNK),
  });
}

describe('the server killed with SIGKILL and restarted on the same data folder', () => {
  it('during a chunk assembly: no partial file is served, and re-sending the last chunk completes the upload at once', async () => {
    let proc = await startChild();
    let author = await signIn();
    let caught: { id: string; data: Buffer } | null = null;
    // Kill the server while it assembles: frozen (SIGSTOP) at the moment the upload is seen
    // assembling, checked still so, then killed. Rarely the assembly wins the race: try again
    // (five tries all lost it once, on PostgreSQL beside another whole test run).
    for (let attempt = 0; attempt < 10 && !caught; attempt += 1) {
      const id = `crash-${attempt}`;
      const data = randomBytes(CHUNK * CHUNKS);
      Buffer.from('%PDF-1.7\n').copy(data);
      for (let i = 0; i < CHUNKS - 1; i += 1) expect((await sendChunk(author, id, data, i)).status).toBe(200);
      let answered = false;
      const last = sendChunk(author, id, data, CHUNKS - 1).then(
        () => (answered = true),
        () => null,
      );
      // Watched on one open connection: a new one per look (tens of milliseconds on PostgreSQL)
      // looked less often than the assembly took, and missed it ten times out of ten.
      const reader = await openReader();
      let status: string | undefined;
      try {
        const state = async () => (await reader.all<{ status: string }>(`select status from chunked_uploads where client_upload_id = '${id}'`))[0]?.status;
        status = await state();
        while (status === 'receiving' && !answered) status = await state();
        proc.kill('SIGSTOP');
        status = await state();
      } finally {
        await reader.close();
      }
      await kill(proc);
      await last;
      if (status === 'assembling') caught = { id, data };
      else proc = await startChild();
      if (!caught) author = await signIn();
    }
    expect(caught, 'the server was never caught assembling').not.toBeNull();
    const { id, data } = caught!;
    const sha1 = createHash('sha1').update(data).digest('hex');

    expect(await integrity()).toEqual([{ integrity_check: 'ok' }]);
    expect((await query<{ status: string }>(`select status from chunked_uploads where client_upload_id = '${id}'`))[0]?.status).toBe('assembling');
    // Whatever the kill left in the file areas, no stored file is a partial one.
    for (const name of await readdir(path.join(dir, 'files', 'pdf'))) {
      expect(createHash('sha1').update(await readFile(path.join(dir, 'files', 'pdf', name))).digest('hex') + '.pdf').toBe(name);
    }
    const leftovers = await temporaryFiles();

    proc = await startChild();
    // Temporary files from before the start are gone.
    expect((await temporaryFiles()).filter((f) => leftovers.includes(f))).toEqual([]);
    author = await signIn();
    expect((await author.get(`/pdf/${sha1}.pdf`)).status).toBe(404);

    const started = Date.now();
    const again = await sendChunk(author, id, data, CHUNKS - 1);
    expect(again.body).toEqual({ url: `/pdf/${sha1}.pdf` });
    expect(Date.now() - started).toBeLessThan(30_000);
    const file = await fetch(`${url}/pdf/${sha1}.pdf`, { headers: { cookie: cookieHeader(author) } });
    expect(file.status).toBe(200);
    expect(Buffer.from(await file.arrayBuffer()).equals(data)).toBe(true);
    expect((await author.get(`/attachment/chunk/status?clientUploadId=${id}`)).body).toMatchObject({ state: 'done', url: `/pdf/${sha1}.pdf` });
    await kill(proc);
  }, 240_000);

  it('during a burst of sign-ups: the database is sound, and sign-ups and sign-ins work after the restart', async () => {
    const proc = await startChild();
    const register = (n: number) =>
      new Client(url)
        .post('/register', { token: 'dev-ok', email: `burst${n}@example.org`, password: PASSWORD, fullname: 'Burst Person' })
        .then((r) => r.status, () => 0);
    // Fewer than the 20 sign-ups an address may make in an hour, one more after the restart included.
    let answered = 0;
    const burst = Array.from({ length: 15 }, (_, n) => register(n).finally(() => (answered += 1)));
    // Killed once the first sign-ups are in, while the rest are under way.
    while (answered < burst.length && ((await query<{ n: number }>("select count(*) as n from profile_emails where email like 'burst%'"))[0]?.n ?? 0) < 3);
    expect(answered).toBeLessThan(burst.length);
    await kill(proc);
    await Promise.all(burst);

    expect(await integrity()).toEqual([{ integrity_check: 'ok' }]);
    // Every profile that made it in has its email, and every email its profile.
    expect(await query("select e.email from profile_emails e left join profiles p on p.id = e.profile_id where p.id is null")).toEqual([]);
    expect(await query("select p.id from profiles p where p.id like '~Burst%' and not exists (select 1 from profile_emails e where e.profile_id = p.id)")).toEqual([]);

    await startChild();
    expect(await (await fetch(`${url}/health`)).json()).toEqual({ status: 'ok', database: 'ok' });
    expect((await new Client(url).post('/register', { token: 'dev-ok', email: 'after@example.org', password: PASSWORD, fullname: 'After Crash' })).status).toBe(200);
    await signIn();
  }, 120_000);
});
