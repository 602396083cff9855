/**
 * The Python client's note, venue, group and attachment methods, request by request as
 * `openreview/api/client.py` builds them (openreview-py, read at e25fd7da), and what it then reads
 * from each answer. Lines cited are of that file unless another is named.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdfBytes, sha1, SUBMISSION, submissionContent, VENUE, venueWithAuthor } from '../attachments/helpers.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { PASSWORD } from '../helpers/users.ts';
import { PythonClient, WebClient } from './clients.ts';

let server: TestServer;
let python: PythonClient;
let organiser: PythonClient;
let authorId: string;
let authorEmail: string;
let noteId: string;
let editId: string;
let secondNoteId: string;
const paper = pdfBytes(40_000);

/** How many files a zip holds: the total its end-of-central-directory record gives. */
function zipEntries(bytes: Buffer): number {
  const end = bytes.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (end < 0) throw new Error('not a zip');
  return bytes.readUInt16LE(end + 10);
}

beforeAll(async () => {
  server = await startServer();
  const venue = await venueWithAuthor(server);
  authorId = venue.authorId;
  // `OpenReviewClient(token=…)` (client.py:141-146): the token goes into the Authorization header.
  python = new PythonClient(server.url);
  python.token = venue.author.bearer ?? (await venue.author.post('/refreshToken')).body.token;
  organiser = new PythonClient(server.url);
  organiser.token = (await venue.root.post('/refreshToken')).body.token;
  authorEmail = (await python.send('GET', '/profiles')).json.profiles[0].content.preferredEmail;
});
afterAll(() => server.close());

describe('the Python client, on notes', () => {
  it('put_attachment sends invitationId, name, then the file named by its path, and reads url (client.py:948-972)', async () => {
    const res = await python.putAttachment('/home/ada/papers/graph paper.pdf', paper, SUBMISSION, 'pdf');
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ url: `/pdf/${sha1(paper)}.pdf` });
  });

  it('post_note_edit posts {invitation, signatures, note} to /notes/edits and reads edit.id and edit.note.id (client.py:2877-2930)', async () => {
    const res = await python.send('POST', '/notes/edits', {
      json: { invitation: SUBMISSION, signatures: [authorId], note: { content: submissionContent(authorId, `/pdf/${sha1(paper)}.pdf`) } },
    });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id: expect.any(String), invitation: SUBMISSION, domain: VENUE, signatures: [authorId], note: { id: expect.any(String), invitations: [SUBMISSION], number: 1 } });
    noteId = res.json.note.id;
    editId = res.json.id;
    const second = await python.send('POST', '/notes/edits', {
      json: { invitation: SUBMISSION, signatures: [authorId], note: { content: { ...submissionContent(authorId, `/pdf/${sha1(paper)}.pdf`), title: { value: 'A second paper' } } } },
    });
    expect(second.status).toBe(200);
    secondNoteId = second.json.note.id;
  });

  it('post_note_edit with a note id revises it, and signing as someone else is refused (client.py:2877-2930)', async () => {
    const res = await python.send('POST', '/notes/edits', {
      json: { invitation: SUBMISSION, signatures: [authorId], note: { id: noteId, content: { title: { value: 'Graphs, revised' } }, invitations: [SUBMISSION], readers: ['everyone'] } },
    });
    expect(res.status).toBe(200);
    expect(res.json.note).toMatchObject({ id: noteId, content: { title: { value: 'Graphs, revised' }, abstract: { value: 'About uploads.' } } });
    const forged = await python.send('POST', '/notes/edits', { json: { invitation: SUBMISSION, signatures: ['~Someone_Else1'], note: { content: submissionContent(authorId, `/pdf/${sha1(paper)}.pdf`) } } });
    expect(forged.status).toBe(403);
    expect(forged.json).toMatchObject({ status: 403, name: 'ForbiddenError' });
  });

  it('get_note reads notes[0] with v2 field names; a missing note is 404 NotFoundError (client.py:540-553; tools.py:340-345)', async () => {
    const res = await python.send('GET', '/notes', { params: { id: noteId, details: null } });
    expect(res.status).toBe(200);
    expect(res.json.notes[0]).toMatchObject({ id: noteId, invitations: [SUBMISSION], forum: noteId, domain: VENUE, signatures: [authorId] });
    const missing = await python.send('GET', '/notes', { params: { id: 'NoSuchNote1' } });
    expect(missing.status).toBe(404);
    expect(missing.json).toMatchObject({ status: 404, name: 'NotFoundError', message: expect.stringMatching(/^Note Not Found/) });
  });

  it('get_notes filters by content.<field>, pages with limit and offset, and counts (client.py:1509-1646)', async () => {
    const byTitle = await python.send('GET', '/notes', { params: { invitation: SUBMISSION, 'content.title': 'Graphs, revised', count: true } });
    expect(byTitle.json).toMatchObject({ count: 1, notes: [{ id: noteId }] });
    const none = await python.send('GET', '/notes', { params: { invitation: SUBMISSION, 'content.title': 'No such title' } });
    expect(none.json).toEqual({ notes: [], count: 0 });
    const page = await python.send('GET', '/notes', { params: { invitation: SUBMISSION, limit: 1, offset: 1, sort: 'number:asc' } });
    expect(page.json).toMatchObject({ count: 2, notes: [{ id: secondNoteId }] });
    const byAuthor = await python.send('GET', '/notes', { params: { 'content.authorids': authorId, sort: 'number:desc' } });
    expect(byAuthor.json.notes.map((n: { id: string }) => n.id)).toEqual([secondNoteId, noteId]);
  });

  it('get_all_notes asks once with stream=true and reads every note (client.py:1648-1779)', async () => {
    const res = await python.send('GET', '/notes', { params: { invitation: SUBMISSION, stream: true } });
    expect(res.status).toBe(200);
    expect(res.json.notes.map((n: { id: string }) => n.id).sort()).toEqual([noteId, secondNoteId].sort());
  });

  it('get_note_edit(id) and get_note_edits(note_id) read edits (client.py:1781-1840)', async () => {
    const one = await python.send('GET', '/notes/edits', { params: { id: editId, trash: false } });
    expect(one.status).toBe(200);
    expect(one.json.edits).toEqual([expect.objectContaining({ id: editId, note: expect.objectContaining({ id: noteId }), invitation: SUBMISSION })]);
    const all = await python.send('GET', '/notes/edits', { params: { 'note.id': noteId, sort: 'tcdate:desc', count: true } });
    expect(all.json.count).toBe(2);
    expect(all.json.edits[1].id).toBe(editId);
  });

  it('get_attachment(name, ids=[a, b]) joins the ids with commas and reads a zip (client.py:809-830)', async () => {
    const res = await python.send('GET', '/attachment', { params: { name: 'pdf', ids: `${noteId},${secondNoteId},${noteId}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/zip');
    expect(zipEntries(res.bytes)).toBe(2);
    const pdf = await python.send('GET', '/pdf', { params: { id: noteId }, headers: { 'content-type': 'application/pdf' } });
    expect(sha1(pdf.bytes)).toBe(sha1(paper));
  });

  it('the web client sends ids repeated, on /pdf too (lib/api-client.js:70-73)', async () => {
    const web = new WebClient(server.url);
    // The web's login form posts {id, password} and keeps the cookies (app/login/LoginForm.js:27-43).
    expect((await web.send('POST', '/login', { id: authorEmail, password: PASSWORD })).status).toBe(200);
    const res = await web.send('GET', '/pdf', { ids: [noteId, secondNoteId] });
    expect(res.status).toBe(200);
    expect(zipEntries(res.bytes)).toBe(2);
    const tooMany = await web.send('GET', '/pdf', { ids: Array.from({ length: 51 }, (_, i) => `note${i}`) });
    expect(tooMany.status).toBe(400);
    expect(tooMany.json).toMatchObject({ status: 400, name: 'ValidationError' });
  });

  it('get_attachment on a revision, a group and an invitation (client.py:783-830)', async () => {
    const edit = await python.send('GET', '/notes/edits/attachment', { params: { id: editId, name: 'pdf' } });
    expect(edit.status).toBe(200);
    expect(sha1(edit.bytes)).toBe(sha1(paper));
    const group = await organiser.send('GET', '/groups/attachment', { params: { id: VENUE, name: 'pdf' } });
    expect(group.status).toBe(404);
    expect(group.json).toMatchObject({ name: 'NotFoundError', message: expect.stringContaining('holds no file') });
    const invitation = await python.send('GET', '/invitations/attachment', { params: { id: 'Nowhere.org/-/Nothing', name: 'pdf' } });
    expect(invitation.json).toMatchObject({ status: 404, name: 'NotFoundError', message: 'Invitation Not Found: Nowhere.org/-/Nothing' });
  });

  it('get_invitation reads invitations[0] with the v2 edit beside our form (client.py:525-538)', async () => {
    const res = await organiser.send('GET', '/invitations', { params: { id: SUBMISSION } });
    expect(res.status).toBe(200);
    expect(res.json.invitations[0]).toMatchObject({ id: SUBMISSION, domain: VENUE, edit: { note: { content: { title: { order: 1 }, pdf: { value: { param: { type: 'file' } } } } } } });
  });

  it('get_venues(id) and get_venues(ids) read venues (client.py:832-858)', async () => {
    const one = await python.send('GET', '/venues', { params: { id: VENUE } });
    expect(one.json.venues).toEqual([expect.objectContaining({ id: VENUE, config: expect.objectContaining({ venueId: VENUE }) })]);
    const several = await python.send('GET', '/venues', { params: { ids: `${VENUE},Nowhere.org` } });
    expect(several.json.venues.map((v: { id: string }) => v.id)).toEqual([VENUE]);
  });

  it('get_group(id) reads groups[0]: the caller’s email group, and a venue group for its organisers (client.py:491-523)', async () => {
    const own = await python.send('GET', '/groups', { params: { id: authorEmail } });
    expect(own.json.groups).toEqual([expect.objectContaining({ id: authorEmail, members: [authorId] })]);
    const venue = await organiser.send('GET', '/groups', { params: { id: VENUE } });
    expect(venue.json.groups[0]).toMatchObject({ id: VENUE, domain: VENUE });
    // Who is in a venue's groups is for its organisers, not for every author.
    expect((await python.send('GET', '/groups', { params: { id: VENUE } })).status).toBe(404);
    const hidden = await new PythonClient(server.url).send('GET', '/groups', { params: { id: authorEmail } });
    expect(hidden.json).toMatchObject({ status: 404, name: 'NotFoundError', message: `Group Not Found: ${authorEmail}` });
  });

  it('post_note_edit(await_process=True) polls /logs/process and reads logs[0].status (client.py:240-256)', async () => {
    const res = await python.send('GET', '/logs/process', { params: { id: editId } });
    expect(res.json).toEqual({ logs: [{ id: editId, status: 'ok', invitation: SUBMISSION, cdate: expect.any(Number) }] });
  });

  it('get_notes by signature, and edits in the v2 shape with edit.note.content (client.py:1509-1646, 3634-3665)', async () => {
    const signed = await python.send('GET', '/notes', { params: { signature: authorId, mintcdate: 0, sort: 'number' } });
    expect(signed.json.notes.map((n: { id: string }) => n.id)).toEqual([noteId, secondNoteId]);
    const edits = await python.send('GET', '/notes/edits', { params: { 'note.id': noteId, limit: 1, count: true } });
    expect(edits.json).toMatchObject({ count: 2, edits: [{ note: { id: noteId, content: { title: { value: 'Uploaded paper' } } } }] });
    // A content filter needs an indexed filter to start from, so no query reads every note.
    const scan = await python.send('GET', '/notes', { params: { 'content.title': 'Uploaded paper' } });
    expect(scan.json).toMatchObject({ status: 400, name: 'ValidationError' });
  });

  it('a venue group’s members are not shown to guests or strangers, only to its organisers (client.py:1111-1172)', async () => {
    const reviewers = `${VENUE}/Reviewers`;
    expect((await organiser.send('POST', '/groups/members', { json: { id: reviewers, members: ['secret.reviewer@example.org'] } })).status).toBe(200);
    expect((await new PythonClient(server.url).send('GET', '/groups', { params: { id: reviewers } })).status).toBe(404);
    expect((await python.send('GET', '/groups', { params: { member: 'secret.reviewer@example.org' } })).json).toEqual({ groups: [], count: 0 });
    const seen = await organiser.send('GET', '/groups', { params: { prefix: `${VENUE}/`, stream: true } });
    expect(seen.json.groups.map((g: { id: string }) => g.id)).toContain(reviewers);
    expect(seen.json.groups.find((g: { id: string }) => g.id === reviewers).members).toEqual(['secret.reviewer@example.org']);
  });

  it('delete_note sends DELETE /notes with {id} and reads status; the note is then gone (client.py:2410-2422)', async () => {
    const res = await python.send('DELETE', '/notes', { json: { id: secondNoteId } });
    expect(res.json).toEqual({ status: 'ok' });
    expect((await python.send('GET', '/notes', { params: { id: secondNoteId } })).status).toBe(404);
    expect((await python.send('GET', '/notes', { params: { invitation: SUBMISSION, trash: true } })).json.count).toBe(2);
    const again = await python.send('DELETE', '/notes', { params: { id: secondNoteId } });
    expect(again.json).toMatchObject({ status: 404, name: 'NotFoundError' });
    // Its history stays with its writers; nobody may reply to it.
    expect((await python.send('GET', '/notes/edits', { params: { 'note.id': secondNoteId } })).status).toBe(200);
    expect((await new PythonClient(server.url).send('GET', '/notes/edits', { params: { 'note.id': secondNoteId } })).status).toBe(404);
  });
});
