/**
 * Found by an independent fuzz. A field name is letters, digits and underscores, which also spell
 * what every JavaScript object inherits (`constructor`, `toString`, `__proto__`). Looked up with
 * `form[name]`, such a name found the inherited function: an upload for a field `constructor` was
 * a 500, a note's content could carry `constructor` past every check of a closed form, and an
 * optional form field named `toString` could never be left out. Only a form's own fields count now.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdfBytes, SUBMISSION, submissionContent, venueWithAuthor } from '../attachments/helpers.ts';
import { encodeMetadata, tusRequest } from '../attachments/tus-helpers.ts';
import { sendMultipart, type Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';
import { venueConfig } from '../helpers/venue.ts';

const INHERITED = ['constructor', 'toString', 'hasOwnProperty', 'valueOf', '__proto__'];

let server: TestServer;
let root: Client;
let author: { id: string; client: Client; token: string };
beforeAll(async () => {
  server = await startServer();
  ({ root } = await venueWithAuthor(server));
  const user = await createActiveUser(server, { fullname: 'Field Namer' });
  author = { id: user.id, ...(await loggedIn(server, user.email)) };
});
afterAll(async () => {
  await server.close();
});

describe('a field named as what every object inherits', () => {
  it('is no file field: the upload rules, every upload route and tus refuse it with 400', async () => {
    for (const name of INHERITED) {
      const rules = await author.client.get(`/attachment/rules?invitationId=${encodeURIComponent(SUBMISSION)}&name=${name}`);
      expect(rules.status, name).toBe(400);
      expect(rules.body.message).toBe(`The invitation ${SUBMISSION} has no file field ${name}`);
      const whole = await sendMultipart(author.client, 'PUT', '/attachment', { name, invitationId: SUBMISSION }, { filename: 'p.pdf', data: pdfBytes(1000) });
      expect(whole.status, name).toBe(400);
      const chunk = await sendMultipart(author.client, 'PUT', '/attachment/chunk', { name, invitationId: SUBMISSION, clientUploadId: `c-${name}`, chunkIndex: '0', totalChunks: '1' }, { filename: 'p.pdf', data: pdfBytes(1000) });
      expect(chunk.status, name).toBe(400);
      const tus = await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: { 'Upload-Length': '20', 'Upload-Metadata': encodeMetadata({ invitation: SUBMISSION, name, filename: 'p.pdf' }) } });
      expect(tus.status, name).toBe(400);
    }
    expect(await server.service.db('tus_uploads').count({ n: '*' }).first()).toEqual({ n: 0 });
    expect(await server.service.db('chunked_uploads').count({ n: '*' }).first()).toEqual({ n: 0 });
  });

  it('is not a field of a closed form: a note carrying one is refused', async () => {
    const pdf = await sendMultipart(author.client, 'PUT', '/attachment', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'p.pdf', data: pdfBytes(1200) });
    expect(pdf.status).toBe(200);
    for (const name of ['constructor', 'toString', 'hasOwnProperty']) {
      const note = await author.client.post('/notes', { invitation: SUBMISSION, content: { ...submissionContent(author.id, pdf.body.url), [name]: { value: 'x' } } });
      expect(note.status, name).toBe(400);
      expect(note.body.name).toBe('AdditionalPropertiesError');
    }
  });

  it('may be a form’s own optional field, left out of a note', async () => {
    const venue = 'Inherited.org/2027';
    const invitation = `${venue}/-/Note`;
    expect((await root.post('/venues', venueConfig(venue))).status).toBe(200);
    const form = { title: { order: 1, value: { param: { type: 'string' } } }, toString: { order: 2, value: { param: { type: 'string', optional: true } } } };
    expect((await root.post('/invitations', { id: invitation, domain: venue, form, invitees: ['~'] })).status).toBe(200);
    const note = await author.client.post('/notes', { invitation, content: { title: { value: 'Without it' } } });
    expect(note.status, JSON.stringify(note.body)).toBe(200);
    const kept = await author.client.post('/notes', { invitation, content: { title: { value: 'With it' }, toString: { value: 'its own' } } });
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
  });
});
