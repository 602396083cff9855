/**
 * The attack: a signed-in user who is not among an invitation's invitees (a reviewers-only form,
 * say) sends files for its file field with `PUT /attachment` and `PUT /attachment/chunk`. The
 * server stored them (and their chunks) although the same user could never post a note to that
 * invitation: disk filled, and files attributed to an invitation they have no part in. Uploads
 * now follow the rule of `POST /notes`: invitees and super users only; anyone else gets a 403
 * with the Error body, and nothing is kept.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filesUnder, pdfBytes, VENUE, venueWithAuthor, whileStoringFails } from '../attachments/helpers.ts';
import { Client, sendMultipart } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { encodeMetadata, metadataFor, signedInPerson, tusRequest, type Person } from '../attachments/tus-helpers.ts';

const REVIEWER_FILES = `${VENUE}/-/Reviewer_Files`;
let server: TestServer;
let root: Client;
let author: Client;
let authorId: string;

beforeAll(async () => {
  server = await startServer();
  ({ root, author, authorId } = await venueWithAuthor(server));
  const res = await root.post('/invitations', {
    id: REVIEWER_FILES,
    domain: VENUE,
    invitees: [`${VENUE}/Reviewers`],
    form: { doc: { order: 1, value: { param: { type: 'file', extensions: ['pdf'] } } } },
  });
  expect(res.status).toBe(200);
});
afterAll(() => server.close());

const whole = (client: Client) => sendMultipart(client, 'PUT', '/attachment', { name: 'doc', invitationId: REVIEWER_FILES }, { filename: 'd.pdf', data: pdfBytes(4000) });
const chunk = (client: Client, clientUploadId: string) =>
  sendMultipart(client, 'PUT', '/attachment/chunk', { name: 'doc', invitationId: REVIEWER_FILES, clientUploadId, chunkIndex: 0, totalChunks: 2 }, { filename: 'd.pdf', data: pdfBytes(4000) });
const rows = async (table: string) => Number((await server.service.db(table).count({ n: '*' }))[0]?.n);

describe('an upload for an invitation the uploader is not invited to', () => {
  it('is refused with a 403, whole or in chunks, and nothing of it is kept', async () => {
    const before = await filesUnder(server.dataDir);
    const refusal = { status: 403, name: 'ForbiddenError', message: `You are not invited to post to ${REVIEWER_FILES}`, details: { reqId: expect.any(String) } };
    const w = await whole(author);
    expect(w.status).toBe(403);
    expect(w.body).toEqual(refusal);
    const c = await chunk(author, 'not-invited');
    expect(c.status).toBe(403);
    expect(c.body).toEqual(refusal);
    expect(await filesUnder(server.dataDir)).toEqual(before);
    expect([await rows('uploads'), await rows('chunked_uploads'), await rows('upload_chunks')]).toEqual([0, 0, 0]);
  });

  it('is taken from an invitee, and from a super user', async () => {
    expect((await root.post('/groups/members', { id: `${VENUE}/Reviewers`, members: [authorId] })).status).toBe(200);
    expect((await whole(author)).body).toEqual({ url: expect.stringMatching(/^\/pdf\/[0-9a-f]{40}\.pdf$/) });
    expect((await chunk(author, 'invited')).body).toEqual({ 0: 'completed', 1: 'missing' });
    expect((await whole(root)).status).toBe(200);
  });

  it('is checked when a chunked upload begins, as tus checks it at creation: an upload begun by an invitee goes on, a new one is refused', async () => {
    const begun = (clientUploadId: string, chunkIndex: number) =>
      sendMultipart(author, 'PUT', '/attachment/chunk', { name: 'doc', invitationId: REVIEWER_FILES, clientUploadId, chunkIndex, totalChunks: 3 }, { filename: 'd.pdf', data: pdfBytes(4000) });
    expect((await begun('begun-invited', 0)).status).toBe(200);
    await server.service.db('group_members').where({ group_id: `${VENUE}/Reviewers`, member: authorId }).delete();
    expect((await begun('begun-invited', 1)).body).toEqual({ 0: 'completed', 1: 'completed', 2: 'missing' });
    const fresh = await begun('begun-after', 0);
    expect(fresh.status).toBe(403);
    expect(await server.service.db('chunked_uploads').where({ client_upload_id: 'begun-after' })).toEqual([]);
  });

  it('a profile limited by a moderator while its chunked upload is under way can send no more of it', async () => {
    expect((await root.post('/groups/members', { id: `${VENUE}/Reviewers`, members: [authorId] })).status).toBe(200);
    const send = (chunkIndex: number) =>
      sendMultipart(author, 'PUT', '/attachment/chunk', { name: 'doc', invitationId: REVIEWER_FILES, clientUploadId: 'limited-meanwhile', chunkIndex, totalChunks: 3 }, { filename: 'd.pdf', data: pdfBytes(4000) });
    expect((await send(0)).status).toBe(200);
    await server.service.db('profiles').where({ id: authorId }).update({ state: 'Limited' });
    try {
      const refused = await send(1);
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({ name: 'ForbiddenError', message: 'A limited profile cannot author notes' });
      const chunks = await server.service.db('upload_chunks').join('chunked_uploads', 'chunked_uploads.id', 'upload_chunks.upload_id').where({ client_upload_id: 'limited-meanwhile' }).select('chunk_index');
      expect(chunks.map((row: { chunk_index: number }) => Number(row.chunk_index))).toEqual([0]);
    } finally {
      await server.service.db('profiles').where({ id: authorId }).update({ state: 'Active' });
    }
  });

  it('nor of its tus upload: a PATCH after the limit is refused before any byte is kept', async () => {
    const person = await reviewer('Tus Uploader');
    const data = pdfBytes(8000);
    const metadata = encodeMetadata(metadataFor(REVIEWER_FILES, 'doc', 'd.pdf'));
    const created = await tusRequest(server, 'POST', '/attachment/tus', { token: person.token, headers: { 'Upload-Length': String(data.length), 'Upload-Metadata': metadata } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const url = created.headers.get('location') ?? '';
    const first = await tusRequest(server, 'PATCH', url, { token: person.token, headers: { 'Upload-Offset': '0' }, body: data.subarray(0, 4000) });
    expect(first.status, JSON.stringify(first.body)).toBe(204);
    await server.service.db('profiles').where({ id: person.id }).update({ state: 'Limited' });
    const before = await filesUnder(server.dataDir);
    const refused = await tusRequest(server, 'PATCH', url, { token: person.token, headers: { 'Upload-Offset': '4000' }, body: data.subarray(4000) });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ name: 'ForbiddenError', message: 'A limited profile cannot author notes' });
    const head = await tusRequest(server, 'HEAD', url, { token: person.token });
    expect(head.headers.get('upload-offset')).toBe('4000');
    expect(await filesUnder(server.dataDir)).toEqual(before);
  });

  it('nor keep by a HEAD a tus upload whose file was not kept when its last PATCH ended', async () => {
    const person = await reviewer('Tus Keeper');
    const data = pdfBytes(8000);
    const created = await tusRequest(server, 'POST', '/attachment/tus', { token: person.token, headers: { 'Upload-Length': String(data.length), 'Upload-Metadata': encodeMetadata(metadataFor(REVIEWER_FILES, 'doc', 'k.pdf')) } });
    const url = created.headers.get('location') ?? '';
    expect((await tusRequest(server, 'PATCH', url, { token: person.token, headers: { 'Upload-Offset': '0' }, body: data.subarray(0, 4000) })).status).toBe(204);
    await whileStoringFails(server.dataDir, async () => {
      const cut = await tusRequest(server, 'PATCH', url, { token: person.token, headers: { 'Upload-Offset': '4000' }, body: data.subarray(4000) });
      expect(cut.status).toBeGreaterThanOrEqual(500);
    });
    await expectKeptOnlyOnceActive(person, () => tusRequest(server, 'HEAD', url, { token: person.token }));
    // Limited again: a repeated PATCH of the complete upload adds nothing, and is answered as tus answers it.
    await server.service.db('profiles').where({ id: person.id }).update({ state: 'Limited' });
    const repeated = await tusRequest(server, 'PATCH', url, { token: person.token, headers: { 'Upload-Offset': '8000' }, body: new Uint8Array(0) });
    expect(repeated.status, JSON.stringify(repeated.body)).toBe(204);
    expect(repeated.headers.get('upload-offset')).toBe('8000');
  });

  it('nor keep by a repeated POST a parallel upload whose file was not kept when it was first asked for', async () => {
    const person = await reviewer('Tus Joiner');
    const data = pdfBytes(8000);
    const metadata = encodeMetadata(metadataFor(REVIEWER_FILES, 'doc', 'j.pdf'));
    const parts: string[] = [];
    for (const piece of [data.subarray(0, 4000), data.subarray(4000)]) {
      const part = await tusRequest(server, 'POST', '/attachment/tus', { token: person.token, headers: { 'Upload-Length': String(piece.length), 'Upload-Concat': 'partial', 'Upload-Metadata': metadata } });
      expect(part.status, JSON.stringify(part.body)).toBe(201);
      const url = part.headers.get('location') ?? '';
      expect((await tusRequest(server, 'PATCH', url, { token: person.token, headers: { 'Upload-Offset': '0' }, body: piece })).status).toBe(204);
      parts.push(new URL(url).pathname);
    }
    const final = () => tusRequest(server, 'POST', '/attachment/tus', { token: person.token, headers: { 'Upload-Concat': `final;${parts.join(' ')}`, 'Upload-Metadata': metadata } });
    await whileStoringFails(server.dataDir, async () => expect((await final()).status).toBeGreaterThanOrEqual(500));
    await expectKeptOnlyOnceActive(person, final);
  });
});

/** A signed-in person made a reviewer, so invited to upload reviewer files. */
async function reviewer(fullname: string): Promise<Person> {
  const person = await signedInPerson(server, fullname);
  expect((await root.post('/groups/members', { id: `${VENUE}/Reviewers`, members: [person.id] })).status).toBe(200);
  return person;
}

/** `keep` (a HEAD, a repeated POST) keeps the person's complete upload only while the profile is not `Limited`. */
async function expectKeptOnlyOnceActive(person: { id: string }, keep: () => Promise<{ status: number; body: unknown }>): Promise<void> {
  const keptRows = () => server.service.db('uploads').where({ profile_id: person.id });
  await server.service.db('profiles').where({ id: person.id }).update({ state: 'Limited' });
  const refused = await keep();
  expect(refused.status).toBe(403);
  expect(await keptRows()).toEqual([]);
  // Active again, the same request keeps it.
  await server.service.db('profiles').where({ id: person.id }).update({ state: 'Active' });
  const again = await keep();
  expect(again.status, JSON.stringify(again.body)).toBeLessThan(300);
  expect(await keptRows()).toHaveLength(1);
}
