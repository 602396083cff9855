/**
 * What the web client asks for notes and groups on a person's pages, as it sends it: its
 * profile page (`app/profile/Profile.js:57-72`: the person's notes, whose co-authors
 * `lib/profiles.js:223` reads the v2 way only when a note says `version: 2`, as the forum page
 * does, `app/forum/page.js:76`), the profile editor's imported publications
 * (`components/profile/ImportedPublicationsSection.js:85-118`: `invitations` repeated, and a
 * filter on the objects of a field, `content.authors.username`), and the home page
 * (`app/(Home)/page.js:33-41`, `_ActiveVenueConsole/ActiveConsoles.js:15-19`: `select`, `web`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { pdfBytes, SUBMISSION, submitPaper, venueWithAuthor, type Client } from '../attachments/helpers.ts';

let server: TestServer;
let author: Client;
let authorId: string;
let noteId: string;

beforeAll(async () => {
  server = await startServer();
  ({ author, authorId } = await venueWithAuthor(server));
  const { note } = await submitPaper(author, authorId, pdfBytes(2_000));
  expect(note.status, JSON.stringify(note.body)).toBe(200);
  noteId = note.body.id;
});
afterAll(() => server.close());

const DBLP_INVITATIONS = ['DBLP.org/-/Record', 'OpenReview.net/Archive/-/Imported_Record', 'OpenReview.net/Archive/-/Direct_Upload', 'OpenReview.net/Public_Article/ORCID.org/-/Record'];
const repeated = (key: string, values: string[]) => values.map((value) => `${key}=${encodeURIComponent(value)}`).join('&');

describe('the profile page', () => {
  it("lists the person's notes as v2 notes, whose authors it reads as lists", async () => {
    const res = await author.get(`/notes?content.authorids=${encodeURIComponent(authorId)}&sort=cdate:desc&limit=1000&count=true`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.notes.map((note: { id: string }) => note.id)).toEqual([noteId]);
    expect(res.body.notes[0]).toMatchObject({ version: 2, content: { authors: { value: ['Upload Author'] }, authorids: { value: [authorId] } } });
    // The forum page's test for its v2 view, on the note read by id.
    expect((await author.get(`/notes?id=${noteId}`)).body.notes[0].version).toBe(2);
  });
});

describe("the profile editor's imported publications", () => {
  it('asks for notes of any of several invitations, and for those whose authors list holds the person', async () => {
    const imported = await author.get(`/notes?content.authorids=${encodeURIComponent(authorId)}&${repeated('invitations', DBLP_INVITATIONS)}&limit=1000&offset=0&count=true`);
    expect(imported.status, JSON.stringify(imported.body)).toBe(200);
    expect(imported.body).toEqual({ notes: [], count: 0 });
    const withObjects = await author.get(`/notes?content.authors.username=${encodeURIComponent(authorId)}&invitations=${encodeURIComponent('OpenReview.net/Public_Article/DBLP.org/-/Record')}&limit=1000&offset=0&count=true`);
    expect(withObjects.status, JSON.stringify(withObjects.body)).toBe(200);
    expect(withObjects.body).toEqual({ notes: [], count: 0 });
  });

  it('finds by `invitations` the notes of any invitation named, and by `content.<field>.<key>` those whose list holds an object with it', async () => {
    const ofAny = await author.get(`/notes?${repeated('invitations', ['DBLP.org/-/Record', SUBMISSION])}`);
    expect(ofAny.body.notes.map((note: { id: string }) => note.id)).toEqual([noteId]);
    // A note whose authors are objects, as imported records hold them (this service's forms
    // write lists of strings: the row is written as such an import would leave it).
    await server.service.db('notes').where({ id: noteId }).update({ content: JSON.stringify({ authors: { value: [{ fullname: 'Upload Author', username: authorId }] } }) });
    const byKey = await author.get(`/notes?content.authors.username=${encodeURIComponent(authorId)}&invitations=${encodeURIComponent(SUBMISSION)}`);
    expect(byKey.body.notes.map((note: { id: string }) => note.id)).toEqual([noteId]);
    expect((await author.get(`/notes?content.authors.username=~Someone_Else1&invitations=${encodeURIComponent(SUBMISSION)}`)).body.notes).toEqual([]);
    // Comma-joined, as `GET /venues?invitations=` takes them too.
    const joined = await author.get(`/notes?content.authors.username=${encodeURIComponent(authorId)}&invitations=${encodeURIComponent(`OpenReview.net/Public_Article/DBLP.org/-/Record,${SUBMISSION}`)}`);
    expect(joined.status, JSON.stringify(joined.body)).toBe(200);
    expect(joined.body.notes.map((note: { id: string }) => note.id)).toEqual([noteId]);
  });
});

describe('the home page', () => {
  it('takes `select` on notes and groups, and `web` on groups, answering whole objects', async () => {
    const news = await author.get(`/notes?invitation=${encodeURIComponent(SUBMISSION)}&select=id,content.title&limit=3&sort=cdate:desc`);
    expect(news.status, JSON.stringify(news.body)).toBe(200);
    expect(news.body.notes[0]).toMatchObject({ id: noteId, version: 2, invitation: SUBMISSION });
    const consoles = await author.get(`/groups?member=${encodeURIComponent(authorId)}&web=true&select=id`);
    expect(consoles.status, JSON.stringify(consoles.body)).toBe(200);
    expect(Array.isArray(consoles.body.groups)).toBe(true);
  });
});
