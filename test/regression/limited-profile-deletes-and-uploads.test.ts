/**
 * Found by an attack review of issue 12: a `Limited` profile (it may sign in and read, not
 * author) could still delete its notes (`DELETE /notes`, `POST /notes/edits` with `note.ddate`)
 * and upload files. Authoring is refused to it everywhere.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdfBytes, SUBMISSION, submissionContent, venueWithAuthor } from '../attachments/helpers.ts';
import { sendMultipart, type Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let author: Client;
let noteId: string;

beforeAll(async () => {
  server = await startServer();
  const venue = await venueWithAuthor(server);
  author = venue.author;
  const uploaded = await sendMultipart(author, 'PUT', '/attachment', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'p.pdf', data: pdfBytes(2000) });
  noteId = (await author.post('/notes', { invitation: SUBMISSION, content: submissionContent(venue.authorId, uploaded.body.url) })).body.id;
  expect((await venue.root.post('/profile/moderate', { id: venue.authorId, decision: 'limit' })).status).toBe(200);
});
afterAll(() => server.close());

describe('a limited profile', () => {
  it('cannot delete its note, either way', async () => {
    const byDelete = await author.request('DELETE', `/notes?id=${noteId}`);
    expect(byDelete.status).toBe(403);
    expect(byDelete.body).toMatchObject({ name: 'ForbiddenError', message: 'A limited profile cannot author notes' });
    const byEdit = await author.post('/notes/edits', { invitation: SUBMISSION, note: { id: noteId, ddate: 1 } });
    expect(byEdit.status).toBe(403);
    expect((await author.get(`/notes?id=${noteId}`)).body.notes).toHaveLength(1);
  });

  it('cannot upload a file', async () => {
    const res = await sendMultipart(author, 'PUT', '/attachment', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'q.pdf', data: pdfBytes(3000) });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ name: 'ForbiddenError' });
  });
});
