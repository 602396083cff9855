/**
 * Found by an independent review of the venue and attachments work. A file's URL typed into a
 * text field (an abstract) of one's own note let its author read that file, someone else's PDF.
 * Only a form's file fields are indexed and served now.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdfBytes, sha1, SUBMISSION, submissionContent, submitPaper, venueWithAuthor } from '../attachments/helpers.ts';
import { sendMultipart, type Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
let author: Client;
let authorId: string;
beforeAll(async () => {
  server = await startServer();
  ({ author, authorId } = await venueWithAuthor(server));
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
});
