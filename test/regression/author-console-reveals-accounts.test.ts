/**
 * Found by an independent review of venue authorisation. The author console shows the state of
 * each author of a submission, and it looked authors up as no other route does: by any address,
 * confirmed or not, and deleted profiles too. An author listing the addresses they wanted to probe
 * learned who had signed up but not activated ("Inactive") and saw deleted profiles as "Active",
 * where `GET /profiles` and the searches answer nothing for both. It now shows what they show.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdfBytes, SUBMISSION, submissionContent, VENUE, venueWithAuthor } from '../attachments/helpers.ts';
import { sendMultipart, type Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, registerAndGetToken } from '../helpers/users.ts';

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

describe('the author console', () => {
  it('shows no state for an address not confirmed or a deleted profile, and the state of the others', async () => {
    await registerAndGetToken(server, { email: 'waiting@example.org', fullname: 'Waiting Person' });
    const active = await createActiveUser(server, { fullname: 'Active Person' });
    const gone = await createActiveUser(server, { fullname: 'Deleted Person' });
    await server.service.db('profiles').where({ id: gone.id }).update({ ddate: Date.now() });
    const probed = [authorId, active.email, 'waiting@example.org', gone.email, gone.id, 'nobody@example.org'];
    const { body: upload } = await sendMultipart(author, 'PUT', '/attachment', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'p.pdf', data: pdfBytes(2000) });
    const note = await author.post('/notes', { invitation: SUBMISSION, content: { ...submissionContent(authorId, upload.url), authorids: { value: probed }, authors: { value: probed.map(() => 'Someone') } } });
    expect(note.status).toBe(200);
    const shown = await author.get(`/venues/${VENUE}/author-console`);
    expect(shown.status).toBe(200);
    expect(shown.body.submissions[0].authors).toEqual([
      { id: authorId, state: 'Active' },
      { id: active.email, state: 'Active' },
      { id: 'waiting@example.org', state: null },
      { id: gone.email, state: null },
      { id: gone.id, state: null },
      { id: 'nobody@example.org', state: null },
    ]);
  });
});
