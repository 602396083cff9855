/**
 * The failure (issue 24, defect 3): a chunk request notes its arrival (`upload_arrivals`) before
 * its body is read, so that chunks sent together wait for each other. A process killed while a
 * chunk's body was half sent left that note behind; nothing removed it, not even a restart, and
 * every other chunk of the upload then waited the full minute for it before answering. Now an
 * arrival is held by its process's lease: after a restart on the same folder the dead process's
 * notes are swept at start and ignored at once, so the re-sent chunks answer straight away.
 */
import type { ChildProcess } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { pdfBytes, sendHeldChunk, sha1, SUBMISSION, VENUE } from '../attachments/helpers.ts';
import { openTestDatabase } from '../helpers/database.ts';
import { Client, sendMultipart } from '../helpers/http.ts';
import { freePort, killHard, startOnPort } from '../helpers/processes.ts';
import { startServer, tempDir } from '../helpers/server.ts';
import { createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';
import { venueConfig } from '../helpers/venue.ts';
import { waitUntil } from '../helpers/wait.ts';

const MB = 1024 * 1024;
const CHUNKS = 3;

let dir: string;
let port: number;
let authorEmail: string;
let child: ChildProcess | null = null;

async function startChild(): Promise<void> {
  child = await startOnPort(dir, port);
}

async function killChild(): Promise<void> {
  if (!child) return;
  await killHard(child);
  child = null;
}

async function arrivals(): Promise<number> {
  const db = await openTestDatabase(dir);
  try {
    return (await db('upload_arrivals')).length;
  } finally {
    await db.destroy();
  }
}

beforeAll(async () => {
  dir = await tempDir();
  port = await freePort();
  const setup = await startServer({}, dir);
  const admin = await createActiveUser(setup, { role: 'superuser', fullname: 'Arrival Admin' });
  expect((await (await loggedIn(setup, admin.email)).client.post('/venues', venueConfig(VENUE))).status).toBe(200);
  authorEmail = (await createActiveUser(setup, { fullname: 'Arrival Author' })).email;
  await setup.close();
});
afterAll(async () => {
  await killChild();
  await rm(dir, { recursive: true, force: true });
});

// Two server starts and a kill: longer than a request-level test.
it('a chunk whose process was killed mid-body is not waited for after the restart', { timeout: 120_000 }, async () => {
  await startChild();
  const url = `http://127.0.0.1:${port}`;
  const author = new Client(url);
  expect((await author.post('/login', { id: authorEmail, password: PASSWORD })).status).toBe(200);
  const data = pdfBytes(CHUNKS * MB - 100);
  const fields = (index: number) => ({ name: 'pdf', invitationId: SUBMISSION, clientUploadId: 'killed-mid-chunk', chunkIndex: index, totalChunks: CHUNKS });
  const part = (index: number) => data.subarray(index * MB, (index + 1) * MB);
  expect((await sendMultipart(author, 'PUT', '/attachment/chunk', fields(0), { filename: 'paper.pdf', data: part(0) })).status).toBe(200);

  // Chunk 1's fields are in and its arrival noted; its body's last kilobyte never comes.
  const held = sendHeldChunk(author, fields(1), part(1), new Promise<void>(() => undefined)).catch(() => null);
  await waitUntil(async () => (await arrivals()) === 1, 'the chunk under way noted');
  await killChild();
  await held;
  expect(await arrivals()).toBe(1);

  await startChild();
  // The restart forgets the dead process's note.
  expect(await arrivals()).toBe(0);
  const started = performance.now();
  const [one, two] = await Promise.all([
    sendMultipart(author, 'PUT', '/attachment/chunk', fields(1), { filename: 'paper.pdf', data: part(1) }),
    sendMultipart(author, 'PUT', '/attachment/chunk', fields(2), { filename: 'paper.pdf', data: part(2) }),
  ]);
  const url1 = `/pdf/${sha1(data)}.pdf`;
  expect([one.body, two.body]).toContainEqual({ url: url1 });
  // Before, the other chunks waited the full 60 s for the dead request; a generous bound far below it.
  expect(performance.now() - started).toBeLessThan(30_000);
  await killChild();
});

it('a note left by a stopped process of this machine is not waited for even before a sweep', async () => {
  // Written as a process that no longer runs would have left it: the pid of no running process.
  await startChild();
  const url = `http://127.0.0.1:${port}`;
  const author = new Client(url);
  expect((await author.post('/login', { id: authorEmail, password: PASSWORD })).status).toBe(200);
  const db = await openTestDatabase(dir);
  const profileId = (await db('profile_emails').where({ email: authorEmail.toLowerCase() }).first('profile_id')) as { profile_id: string };
  const { PROCESS_OWNER } = await import('../../server/attachments/owners.ts');
  const deadHolder = PROCESS_OWNER.replace(/^\d+/, '4194303');
  await db('upload_arrivals').insert({ id: 'left-behind', profile_id: profileId.profile_id, client_upload_id: 'stopped-holder', arrived_at: Date.now(), holder: deadHolder, held_until: Date.now() + 60 * 60_000 });
  await db.destroy();
  const data = pdfBytes(2 * MB - 100);
  const fields = (index: number) => ({ name: 'pdf', invitationId: SUBMISSION, clientUploadId: 'stopped-holder', chunkIndex: index, totalChunks: 2 });
  const started = performance.now();
  const first = await sendMultipart(author, 'PUT', '/attachment/chunk', fields(0), { filename: 'paper.pdf', data: data.subarray(0, MB) });
  expect(first.body).toEqual({ '0': 'completed', '1': 'missing' });
  expect(performance.now() - started).toBeLessThan(30_000);
});
