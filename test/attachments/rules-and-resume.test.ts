import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, sendMultipart } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';
import { pdfBytes, SUBMISSION, venueWithAuthor } from './helpers.ts';

let server: TestServer;
let author: Client;

beforeAll(async () => {
  server = await startServer({ CHUNK_MAX_MB: '8' });
  ({ author } = await venueWithAuthor(server));
});
afterAll(() => server.close());

const MB = 1024 * 1024;
const rules = (client: Client, query: string) => client.get(`/attachment/rules?${query}`);
const status = (client: Client, id: string) => client.get(`/attachment/chunk/status?clientUploadId=${id}`);

describe("what a file for a field must be (GET /attachment/rules)", () => {
  it("answers the field's extensions and size limit, and the server's ceilings", async () => {
    const res = await rules(author, `invitationId=${encodeURIComponent(SUBMISSION)}&name=pdf`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      extensions: ['pdf'],
      maxBytes: 50 * MB,
      maxUploadBytes: server.config.maxUploadBytes,
      maxChunkBytes: 8 * MB,
    });
  });

  it('is a 400 naming the field for an unknown invitation or a field that takes no file', async () => {
    const unknown = await rules(author, 'invitationId=Nowhere/-/Submission&name=pdf');
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ name: 'ValidationError', details: { path: 'invitationId' } });
    const text = await rules(author, `invitationId=${encodeURIComponent(SUBMISSION)}&name=title`);
    expect(text.status).toBe(400);
    expect(text.body).toMatchObject({ name: 'ValidationError', details: { path: 'name' } });
  });

  it('needs a session', async () => {
    const res = await rules(new Client(server.url), `invitationId=${encodeURIComponent(SUBMISSION)}&name=pdf`);
    expect(res.status).toBe(401);
  });
});

describe('where a chunked upload stands (GET /attachment/chunk/status)', () => {
  it('lists the chunks received, by the indices the client sent, and the URL once assembled', async () => {
    const data = pdfBytes(3 * MB);
    const part = (i: number) => data.subarray(i * MB, (i + 1) * MB);
    const send = (i: number) =>
      sendMultipart(author, 'PUT', '/attachment/chunk', { name: 'pdf', invitationId: SUBMISSION, clientUploadId: 'resume-me', chunkIndex: i, totalChunks: 3 }, { filename: 'paper.pdf', data: part(i) });
    expect((await send(0)).status).toBe(200);
    expect((await send(2)).status).toBe(200);
    const halfway = await status(author, 'resume-me');
    expect(halfway.body).toEqual({
      clientUploadId: 'resume-me',
      totalChunks: 3,
      state: 'receiving',
      chunks: { 0: 'completed', 1: 'missing', 2: 'completed' },
      chunkBytes: { 0: MB, 2: MB },
    });
    const done = await send(1);
    expect(done.body).toEqual({ url: expect.stringMatching(/^\/pdf\/[0-9a-f]{40}\.pdf$/) });
    expect((await status(author, 'resume-me')).body).toMatchObject({ state: 'done', url: done.body.url });
  });

  it('lets an assembly that was claimed long ago and never finished (its server stopped) be redone', async () => {
    const data = pdfBytes(2 * MB);
    const send = (i: number) =>
      sendMultipart(author, 'PUT', '/attachment/chunk', { name: 'pdf', invitationId: SUBMISSION, clientUploadId: 'stuck-assembly', chunkIndex: i, totalChunks: 2 }, { filename: 'paper.pdf', data: data.subarray(i * MB, (i + 1) * MB) });
    expect((await send(0)).status).toBe(200);
    // As a server that stopped halfway through assembling would have left it, an hour ago.
    await server.service.db('chunked_uploads').where({ client_upload_id: 'stuck-assembly' }).update({ status: 'assembling', updated_at: Date.now() - 60 * 60 * 1000 });
    const done = await send(1);
    expect(done.body).toEqual({ url: expect.stringMatching(/^\/pdf\/[0-9a-f]{40}\.pdf$/) });
  });

  it('redoes at once an assembly whose process has stopped, however recent its claim', async () => {
    const data = pdfBytes(2 * MB);
    const send = (i: number) =>
      sendMultipart(author, 'PUT', '/attachment/chunk', { name: 'pdf', invitationId: SUBMISSION, clientUploadId: 'orphaned-assembly', chunkIndex: i, totalChunks: 2 }, { filename: 'paper.pdf', data: data.subarray(i * MB, (i + 1) * MB) });
    expect((await send(0)).status).toBe(200);
    // Claimed a moment ago by a process that has since ended.
    const gone = spawnSync(process.execPath, ['-e', '']).pid;
    await server.service.db('chunked_uploads').where({ client_upload_id: 'orphaned-assembly' }).update({ status: 'assembling', assembly_owner: `${gone}.${randomUUID()}`, updated_at: Date.now() });
    const started = Date.now();
    const done = await send(1);
    expect(done.body).toEqual({ url: expect.stringMatching(/^\/pdf\/[0-9a-f]{40}\.pdf$/) });
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("is a 404 for an id never used, and for another person's upload of the same id", async () => {
    const never = await status(author, 'never-used');
    expect(never.status).toBe(404);
    expect(never.body).toMatchObject({ name: 'NotFoundError', details: { path: 'clientUploadId' } });
    const someone = await createActiveUser(server, { fullname: 'Someone Else' });
    const other = (await loggedIn(server, someone.email)).client;
    expect((await status(other, 'resume-me')).status).toBe(404);
  });

  it('refuses a malformed id with a 400 naming it', async () => {
    const res = await status(author, 'no/slashes');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ details: { path: 'clientUploadId' } });
  });
});
