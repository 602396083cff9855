import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import path from 'node:path';
import { cookieHeader } from '../helpers/cookies.ts';
import { Client, sendMultipart, type Reply } from '../helpers/http.ts';
import type { TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';
import { venueConfig } from '../helpers/venue.ts';

export const sha1 = (data: Uint8Array) => createHash('sha1').update(data).digest('hex');

/** A PDF of `size` bytes: the signature, then random bytes (so every one is different). */
export function pdfBytes(size: number): Buffer {
  const data = randomBytes(size);
  Buffer.from('%PDF-1.7\n').copy(data);
  return data;
}

/** Every file under the data folder's file areas (stored files, temporary files, chunks). */
export async function filesUnder(dataDir: string): Promise<string[]> {
  const found: string[] = [];
  for (const area of ['files', 'tmp', 'chunks']) {
    const entries = await readdir(path.join(dataDir, area), { recursive: true, withFileTypes: true }).catch(() => []);
    for (const entry of entries) if (entry.isFile()) found.push(path.join(entry.parentPath, entry.name));
  }
  return found.sort();
}

/** Files being received (the data folder's `tmp/`). */
export async function temporaryFiles(dataDir: string): Promise<string[]> {
  const tmp = path.join(dataDir, 'tmp') + path.sep;
  return (await filesUnder(dataDir)).filter((f) => f.startsWith(tmp));
}

/**
 * Runs `work` while stored PDFs cannot be linked into place (the data folder's `files/pdf` is a
 * plain file), then puts the folder back: keeping a complete upload fails after its bytes are in.
 */
export async function whileStoringFails<T>(dataDir: string, work: () => Promise<T>): Promise<T> {
  const folder = path.join(dataDir, 'files', 'pdf');
  const aside = `${folder}.aside`;
  // Made first if no PDF was kept yet, so that the test runs the same alone.
  await mkdir(folder, { recursive: true });
  await rename(folder, aside);
  await writeFile(folder, 'not a folder');
  try {
    return await work();
  } finally {
    await rm(folder);
    await rename(aside, folder);
  }
}

export const VENUE = 'Uploads.org/2027';
export const SUBMISSION = `${VENUE}/-/Submission`;

/** A venue with the default submission form, its super user, and a signed-in author. */
export async function venueWithAuthor(server: TestServer) {
  const admin = await createActiveUser(server, { role: 'superuser', fullname: 'Upload Admin' });
  const root = (await loggedIn(server, admin.email)).client;
  const res = await root.post('/venues', venueConfig(VENUE));
  if (res.status !== 200) throw new Error(`venue: ${JSON.stringify(res.body)}`);
  const user = await createActiveUser(server, { fullname: 'Upload Author' });
  const author = (await loggedIn(server, user.email)).client;
  return { root, author, authorId: user.id };
}

export function submissionContent(authorId: string, pdf: string) {
  return {
    title: { value: 'Uploaded paper' },
    authors: { value: ['Upload Author'] },
    authorids: { value: [authorId] },
    abstract: { value: 'About uploads.' },
    pdf: { value: pdf },
  };
}

/**
 * An author's paper as the clients submit one: the PDF uploaded with `PUT /attachment`, then a
 * note of the submission invitation holding its URL. Answers the URL and the note's answer.
 */
export async function submitPaper(author: Client, authorId: string, data: Uint8Array): Promise<{ url: string; note: Reply<any> }> {
  const { body } = await sendMultipart(author, 'PUT', '/attachment', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'p.pdf', data });
  const note = await author.post('/notes', { invitation: SUBMISSION, content: submissionContent(authorId, body.url) });
  return { url: body.url, note };
}

/**
 * `PUT /attachment/chunk` with the body's last kilobyte sent only once `release` resolves: the
 * server has the fields (the request is under way) but not the whole chunk, for tests that need
 * two chunks exactly "at once". On a connection of its own (`node:http`, no keep-alive pool), so
 * the held request never lands on a pooled connection the server is closing.
 */
export async function sendHeldChunk(client: Client, fields: Record<string, string | number>, chunk: Uint8Array, release: Promise<void>): Promise<Reply<any>> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, String(value));
  form.append('file', new Blob([chunk]), 'paper.pdf');
  const encoded = new Response(form);
  const body = Buffer.from(await encoded.arrayBuffer());
  const headers: Record<string, string> = { 'content-type': encoded.headers.get('content-type') ?? '', 'content-length': String(body.length) };
  if (client.jar.size > 0) headers.cookie = cookieHeader(client);
  if (client.bearer) headers.authorization = `Bearer ${client.bearer}`;
  return new Promise((resolve, reject) => {
    const req = request(`${client.url}/attachment/chunk`, { method: 'PUT', headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(parts).toString('utf8')), headers: new Headers(), cookies: {} }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.write(body.subarray(0, body.length - 1024));
    void release.then(() => req.end(body.subarray(body.length - 1024)));
  });
}

export { Client };
