/**
 * The attack: two guests send `POST /activatable {"id":"loadN@example.org"}` in a loop while a
 * signed-in user posts notes. Every counted request wrote a rate-limit counter from a second
 * connection to the database file; the notes' transactions (deferred: read, then write) met
 * those commits and got SQLITE_BUSY at once, without waiting, and the statement that failed
 * was kept, paused, holding a stale read snapshot: from then on every write on the service's
 * one connection answered 500 (a note, a correct sign-in), long after the flood, while
 * `/health` said ok. Six `npm run admin -- user add` run together failed the same way.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdfBytes, sha1, submissionContent, SUBMISSION, venueWithAuthor } from '../attachments/helpers.ts';
import { openTestDatabase, TEST_POSTGRES_URL } from '../helpers/database.ts';
import { Client } from '../helpers/http.ts';
import { childEnv, startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { CHECK_KEPT_MS } from '../../server/http/health.ts';

const run = promisify(execFile);
let server: TestServer;
let author: Client;
let authorId: string;

beforeAll(async () => {
  server = await startServer();
  ({ author, authorId } = await venueWithAuthor(server));
});
afterAll(() => server.close());

/** A PDF the author may name in a submission (as if uploaded), so each note is a new one. */
async function uploadedPdf(): Promise<string> {
  const url = `/pdf/${sha1(pdfBytes(64))}.pdf`;
  await server.service.db('uploads').insert({ profile_id: authorId, invitation: SUBMISSION, field: 'pdf', url, size: 64, sha1: url.slice(5, 45), created_at: Date.now() });
  return url;
}

const busyLines = () => server.logs.filter((line) => line.includes('SQLITE_BUSY'));

describe('a guest flood on a counted path', () => {
  it('leaves every write working, during and after it', async () => {
    const victim = await createActiveUser(server, { fullname: 'Flood Victim' });
    const pdfs = await Promise.all(Array.from({ length: 400 }, uploadedPdf));
    let flooding = true;
    const guestStatuses = new Set<number>();
    const guest = async (n: number) => {
      const client = new Client(server.url);
      for (let i = 0; i < 250; i += 1) guestStatuses.add((await client.post('/activatable', { id: `load${n}-${i % 20}@example.org` })).status);
    };
    const noteStatuses: number[] = [];
    const writer = async () => {
      for (let i = 0; flooding && i < pdfs.length - 1; i += 1) {
        noteStatuses.push((await author.post('/notes', { invitation: SUBMISSION, content: submissionContent(authorId, pdfs[i]!) })).status);
      }
    };
    const writing = writer();
    await Promise.all([guest(1), guest(2)]);
    flooding = false;
    await writing;

    expect([...guestStatuses].sort()).toEqual([200, 429]);
    expect(noteStatuses.length).toBeGreaterThan(0);
    expect(noteStatuses.filter((s) => s !== 200)).toEqual([]);
    // After the flood: a note and a correct sign-in.
    const note = await author.post('/notes', { invitation: SUBMISSION, content: submissionContent(authorId, pdfs.at(-1)!) });
    expect(note.status).toBe(200);
    expect((await new Client(server.url).post('/login', { id: victim.email, password: PASSWORD })).status).toBe(200);
    expect(await (await fetch(`${server.url}/health`)).json()).toEqual({ status: 'ok', database: 'ok' });
    expect(busyLines()).toEqual([]);
  }, 120_000);

  it('six `npm run admin -- user add` at once, while the server runs, all succeed', async () => {
    const adds = Array.from({ length: 6 }, async (_, i) =>
      run(process.execPath, ['server/cli/admin.ts', 'user', 'add', '--email', `op${i}@example.org`, '--password', 'Operator-Pass1', '--fullname', 'Op Erator'], {
        env: await childEnv({ DATA_DIR: server.dataDir }),
      }).then(
        ({ stdout }) => stdout.trim(),
        (error: { stderr: string }) => `failed: ${error.stderr}`,
      ),
    );
    // The server keeps writing meanwhile.
    const victim = await createActiveUser(server, { fullname: 'Busy Operator' });
    const logins = Array.from({ length: 6 }, () => new Client(server.url).post('/login', { id: victim.email, password: PASSWORD }).then((r) => r.status));
    const ids = await Promise.all(adds);
    expect(ids.sort()).toEqual(['~Op_Erator1', '~Op_Erator2', '~Op_Erator3', '~Op_Erator4', '~Op_Erator5', '~Op_Erator6']);
    expect(await Promise.all(logins)).toEqual([200, 200, 200, 200, 200, 200]);
    for (let i = 0; i < 6; i += 1) expect((await new Client(server.url).post('/login', { id: `op${i}@example.org`, password: 'Operator-Pass1' })).status).toBe(200);
  }, 120_000);
});

describe('GET /health', () => {
  it('answers 503 with the Error body when the database cannot be written, and ok again once it can', async () => {
    const db = server.service.db;
    // SQLite: the server's one connection refuses writes. PostgreSQL: another session holds the
    // table the probe writes, past the server's lock timeout.
    const blocker = TEST_POSTGRES_URL ? await openTestDatabase(server.dataDir) : undefined;
    const held = await blocker?.transaction();
    if (held) await held.raw('lock table rate_limits in exclusive mode');
    else await db.raw('PRAGMA query_only = ON');
    const settled = () => new Promise((resolve) => setTimeout(resolve, CHECK_KEPT_MS + 50));
    try {
      await settled();
      const res = await fetch(`${server.url}/health`);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ status: 503, name: 'ServiceUnavailableError', message: 'The database is not available', details: { database: 'unavailable', reqId: expect.any(String) } });
    } finally {
      if (held) await held.rollback();
      else await db.raw('PRAGMA query_only = OFF');
      await blocker?.destroy();
    }
    await settled();
    const res = await fetch(`${server.url}/health`);
    expect(res.status).toBe(200);
    expect(await db('rate_limits').where({ key: 'health:probe' }).first()).toBeUndefined();
  });
});
