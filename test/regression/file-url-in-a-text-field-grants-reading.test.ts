/**
 * Found by an independent review of the venue and attachments work. A file's URL typed into a
 * text field (an abstract) of one's own note let its author read that file, someone else's PDF.
 * Only a form's file fields are indexed and served now.
 *
 * Found again by a later review: an organiser of any venue could type the URL into a text field
 * of their own venue's note, then make that field a file field, and the download routes, which
 * asked the form as it is now, served the file. A file is served only as the file index holds it:
 * written while the field was a file field, after the upload checks.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdfBytes, sha1, SUBMISSION, submissionContent, submitPaper, venueWithAuthor } from '../attachments/helpers.ts';
import { sendMultipart, type Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';
import { venueConfig } from '../helpers/venue.ts';

let server: TestServer;
let author: Client;
let authorId: string;
let root: Client;
beforeAll(async () => {
  server = await startServer();
  ({ author, authorId, root } = await venueWithAuthor(server));
});
afterAll(async () => {
  await server.close();
});

describe('a file URL typed into a text field', () => {
  it('gives no right to read the file', async () => {
    const data = pdfBytes(3000);
    const { url } = await submitPaper(author, authorId, data);
    const body = { url };

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

  it('gives no right to read the file when the organiser makes that field a file field afterwards', async () => {
    const data = pdfBytes(3100);
    const { url } = await submitPaper(author, authorId, data);
    const venue = 'Evil.org/2027';
    const invitation = `${venue}/-/Note`;
    expect((await root.post('/venues', venueConfig(venue))).status).toBe(200);
    const eve = await createActiveUser(server, { fullname: 'Eve Organiser' });
    expect((await root.post('/groups/members', { id: `${venue}/Program_Chairs`, members: [eve.id] })).status).toBe(200);
    const eveClient = (await loggedIn(server, eve.email)).client;
    const asText = { doc: { order: 1, value: { param: { type: 'string' } } } };
    expect((await eveClient.post('/invitations', { id: invitation, domain: venue, form: asText, invitees: ['~'] })).status).toBe(200);
    const note = await eveClient.post('/notes', { invitation, content: { doc: { value: url } } });
    expect(note.status).toBe(200);
    const asFile = { doc: { order: 1, value: { param: { type: 'file', extensions: ['pdf'], maxSize: 50 } } } };
    expect((await eveClient.post('/invitations', { id: invitation, domain: venue, form: asFile, invitees: ['~'] })).status).toBe(200);
    expect((await eveClient.get(`/attachment?id=${note.body.id}&name=doc`)).status).toBe(404);
    const [edit] = (await eveClient.get(`/notes/edits?note.id=${note.body.id}`)).body.edits as Array<{ id: string }>;
    expect((await eveClient.get(`/notes/edits/attachment?id=${edit?.id}&name=doc`)).status).toBe(404);
    expect((await eveClient.get(`/pdf/${sha1(data)}.pdf`)).status).toBe(404);
    // Nor does a revision that keeps the value: it was never a file she uploaded.
    const kept = await eveClient.post('/notes', { id: note.body.id, invitation, content: {} });
    expect(kept.status).toBe(400);
    expect(kept.body).toMatchObject({ name: 'ValidationError', details: { path: 'content/doc/value' } });
    expect((await eveClient.get(`/attachment?id=${note.body.id}&name=doc`)).status).toBe(404);
    expect((await eveClient.get(`/pdf/${sha1(data)}.pdf`)).status).toBe(404);
  });
});
