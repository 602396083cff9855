/**
 * Defects found by an independent review of the venue and attachments work, each kept as a test.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, sendMultipart } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';
import { pdfBytes, sha1, SUBMISSION, submissionContent, temporaryFiles, VENUE, venueWithAuthor } from '../attachments/helpers.ts';

let server: TestServer;
let root: Client;
let author: Client;
let authorId: string;

beforeAll(async () => {
  server = await startServer();
  ({ root, author, authorId } = await venueWithAuthor(server));
  await root.post('/invitations', {
    id: `${VENUE}/-/Half`,
    domain: VENUE,
    form: { doc: { order: 1, value: { param: { type: 'file', extensions: ['pdf'], maxSize: 0.5 } } } },
  });
});
afterAll(async () => {
  await server.close();
});

const cookieOf = (client: Client) => [...client.jar].map(([k, v]) => `${k}=${v}`).join('; ');

describe('a file URL typed into a text field', () => {
  it('gives no right to read the file', async () => {
    const data = pdfBytes(3000);
    const { body } = await sendMultipart(author, 'PUT', '/attachment', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'p.pdf', data });
    await author.post('/notes', { invitation: SUBMISSION, content: submissionContent(authorId, body.url) });

    const eve = await createActiveUser(server);
    const eveClient = (await loggedIn(server, eve.email)).client;
    expect((await eveClient.get(`/pdf/${sha1(data)}.pdf`)).status).toBe(404);
    // Eve's own submission, with the victim's URL in its abstract and her own PDF in its pdf field.
    const own = await sendMultipart(eveClient, 'PUT', '/attachment', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'e.pdf', data: pdfBytes(2000) });
    const note = await eveClient.post('/notes', {
      invitation: SUBMISSION,
      content: { ...submissionContent(eve.id, own.body.url), abstract: { value: body.url } },
    });
    expect(note.status).toBe(200);
    expect((await eveClient.get(`/pdf/${sha1(data)}.pdf`)).status).toBe(404);
    expect((await eveClient.get(`/attachment?id=${note.body.id}&name=abstract`)).status).toBe(404);
  });
});

describe('an upload over maxSize with the fields sent first', () => {
  it('is answered 413 at once, not left hanging, and leaves nothing behind', async () => {
    const res = await sendMultipart(author, 'PUT', '/attachment', { name: 'doc', invitationId: `${VENUE}/-/Half` }, { filename: 'big.pdf', data: pdfBytes(3 * 1024 * 1024) }, {});
    expect(res.status).toBe(413);
    expect(await temporaryFiles(server.dataDir)).toEqual([]);
    const chunk = await sendMultipart(
      author,
      'PUT',
      '/attachment/chunk',
      { name: 'doc', invitationId: `${VENUE}/-/Half`, clientUploadId: 'big-chunk', chunkIndex: 0, totalChunks: 2 },
      { filename: 'big.pdf', data: pdfBytes(2 * 1024 * 1024) },
    );
    expect(chunk.status).toBe(413);
  }, 20_000);
});

describe('chunk counts', () => {
  it('a totalChunks in the millions is refused before any status map is built', async () => {
    const res = await sendMultipart(
      author,
      'PUT',
      '/attachment/chunk',
      { name: 'pdf', invitationId: SUBMISSION, clientUploadId: 'huge-count', chunkIndex: 0, totalChunks: 5_000_000 },
      { filename: 'p.pdf', data: pdfBytes(100) },
    );
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual({ path: 'totalChunks', reqId: expect.any(String) });
  });
});

describe('reading back', () => {
  it('an unsatisfiable range is a 416 Error body, not a 500', async () => {
    const data = pdfBytes(1000);
    const { body } = await sendMultipart(author, 'PUT', '/attachment', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'p.pdf', data });
    const note = await author.post('/notes', { invitation: SUBMISSION, content: submissionContent(authorId, body.url) });
    const res = await fetch(`${server.url}/pdf?id=${note.body.id}`, { headers: { cookie: cookieOf(author), range: 'bytes=999999-' } });
    expect(res.status).toBe(416);
    expect(await res.json()).toMatchObject({ status: 416, name: 'RangeNotSatisfiableError' });
  });

  it('a PDF nobody holds is 404 for a signed-in user too', async () => {
    const res = await author.get(`/pdf/${'e'.repeat(40)}.pdf`);
    expect(res.status).toBe(404);
    expect(res.body.name).toBe('NotFoundError');
  });
});
