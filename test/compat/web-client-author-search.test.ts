/**
 * The web client's author search, where a submission's authors are picked
 * (`components/EditorComponents/ProfileSearchWidget.js:285-335`, and its variant
 * `ProfileSearchWithInstitutionWidget.js:325-350`): `GET /profiles/search` with `fullname` (the
 * typed name, lower-cased), `id` (a typed tilde id) or `email` (a typed address), `es`, `limit`
 * and `offset`. It pages with the answer's `count` (capped at 200), keeps only the profiles that
 * show emails (`p.content.emails?.length`), and lists each one's `emailsConfirmed` or
 * `preferredEmail`, which the real platform shows others as their domains (`****@domain`).
 * And the author console's look-up of a submission's authors, to show whether their profiles
 * are active (`components/webfield/AuthorConsole.js:512-530`): `GET /profiles?ids=` with the
 * tilde ids joined by commas.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

interface Found {
  id: string;
  content: { emails?: string[]; emailsConfirmed?: string[]; preferredEmail?: string };
}

let server: TestServer;
let author: Client;
let ada: { id: string; email: string };
let adaAgain: { id: string; email: string };
let adaClient: Client;

beforeAll(async () => {
  server = await startServer();
  author = (await loggedIn(server, (await createActiveUser(server, { fullname: 'Sam Submitter' })).email)).client;
  ada = await createActiveUser(server, { fullname: 'Ada Lovelace', email: 'ada@math.example.org' });
  adaAgain = await createActiveUser(server, { fullname: 'Ada Lovelace', email: 'lovelace@engines.example.com' });
  adaClient = (await loggedIn(server, ada.email)).client;
});
afterAll(() => server.close());

/** The widget's search for what was typed, as it sends it (page size 20). */
const search = (client: Client, key: 'fullname' | 'id' | 'email', value: string, page = 1) =>
  client.get(`/profiles/search?${key}=${encodeURIComponent(value)}&es=true&limit=20&offset=${20 * (page - 1)}`);

/** What the widget keeps of an answer (the editor's filter), and what it lists of each profile. */
const listed = (profiles: Found[]) => profiles.filter((p) => p.content.emails?.length).map((p) => ({ id: p.id, shown: p.content.emailsConfirmed, preferred: p.content.preferredEmail }));

describe('a name typed', () => {
  it('finds each person of that name, with the count the pager reads, and their addresses’ domains only', async () => {
    const res = await search(author, 'fullname', 'ada lovelace');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.count).toBe(2);
    expect(listed(res.body.profiles)).toEqual(
      [
        { id: ada.id, shown: ['****@math.example.org'], preferred: '****@math.example.org' },
        { id: adaAgain.id, shown: ['****@engines.example.com'], preferred: '****@engines.example.com' },
      ].sort((a, b) => a.id.localeCompare(b.id)),
    );
    expect(JSON.stringify(res.body)).not.toContain(ada.email);
    expect(JSON.stringify(res.body)).not.toContain(adaAgain.email);
  });

  it('pages: the count stays the number of every match', async () => {
    const first = await author.get('/profiles/search?fullname=ada%20lovelace&es=true&limit=1&offset=0');
    const second = await author.get('/profiles/search?fullname=ada%20lovelace&es=true&limit=1&offset=1');
    expect([first.body.count, second.body.count]).toEqual([2, 2]);
    expect([...first.body.profiles, ...second.body.profiles].map((p: Found) => p.id).sort()).toEqual([ada.id, adaAgain.id].sort());
  });

  it('shows a person their own addresses whole', async () => {
    const res = await search(adaClient, 'fullname', 'ada lovelace');
    const own = (res.body.profiles as Found[]).find((p) => p.id === ada.id);
    expect(own?.content.emailsConfirmed).toEqual([ada.email]);
  });
});

describe('names in any script, and what no name is', () => {
  it('finds a name with capitals outside ASCII, typed lower-cased, in any script', async () => {
    const elodie = await createActiveUser(server, { fullname: 'Élodie Dupont' });
    const ivan = await createActiveUser(server, { fullname: 'Иван Петров' });
    for (const [typed, id] of [['élodie dupont', elodie.id], ['ÉLODIE DUPONT', elodie.id], ['иван петров', ivan.id]] as const) {
      const res = await search(author, 'fullname', typed);
      expect({ typed, ids: res.body.profiles.map((p: Found) => p.id), count: res.body.count }).toEqual({ typed, ids: [id], count: 1 });
    }
    expect((await author.get(`/profiles/search?term=${encodeURIComponent('élo')}`)).body.profiles.map((p: Found) => p.id)).toEqual([elodie.id]);
  });

  it('answers nobody for a name no tilde id can be made of, as the real platform does', async () => {
    const res = await search(author, 'fullname', "o'brien 2nd");
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ profiles: [], count: 0 });
  });

  it('refuses a term too short to be anyone’s start (one letter would list nearly everyone)', async () => {
    for (const term of ['~', ' ', 'a', '~a']) {
      const res = await author.get(`/profiles/search?term=${encodeURIComponent(term)}`);
      expect({ term, status: res.status, name: res.body.name }).toEqual({ term, status: 400, name: 'ValidationError' });
    }
  });
});

describe('a tilde id or an address typed', () => {
  it('finds the one profile of a tilde id', async () => {
    const res = await search(author, 'id', ada.id);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect({ count: res.body.count, found: listed(res.body.profiles) }).toEqual({ count: 1, found: [{ id: ada.id, shown: ['****@math.example.org'], preferred: '****@math.example.org' }] });
    expect((await search(author, 'id', '~Nobody_Here1')).body).toEqual({ profiles: [], count: 0 });
  });

  it('finds the profile holding a confirmed address (the institution variant)', async () => {
    const res = await search(author, 'email', adaAgain.email);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect({ count: res.body.count, ids: res.body.profiles.map((p: Found) => p.id) }).toEqual({ count: 1, ids: [adaAgain.id] });
  });

  it('refuses two ways of searching at once, with the Error body', async () => {
    const res = await author.get(`/profiles/search?id=${encodeURIComponent(ada.id)}&fullname=ada%20lovelace`);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ name: 'ValidationError', status: 400 });
  });
});

describe("the author console's look-up of a submission's authors", () => {
  it('answers the profiles of the ids given, joined by commas, leaving out those no profile holds', async () => {
    const res = await author.get(`/profiles?ids=${encodeURIComponent([adaAgain.id, '~Nobody_Here1', ada.id].join(','))}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.profiles.map((p: Found) => p.id)).toEqual([ada.id, adaAgain.id].sort());
    // The console maps them by the usernames of their names; others' emails stay unseen here,
    // their lists empty (the author search calls `content.emails.find` on each author it loads
    // by id when a submission is edited, ProfileSearchWidget.js:715-718).
    expect(res.body.profiles[0].content.names[0].username).toMatch(/^~Ada_Lovelace\d+$/);
    expect(JSON.stringify(res.body)).not.toContain('example.');
    for (const profile of res.body.profiles as Found[]) expect(profile.content.emails?.find((email) => email === ada.id)).toBeUndefined();
    const byPost = await author.post('/profiles/search', { ids: [ada.id, adaAgain.id] });
    expect((byPost.body.profiles as Found[]).map((p) => p.content.emails)).toEqual([[], []]);
  });

  it('refuses more than 1000 ids, or ids with another way of looking up, with the Error body', async () => {
    const many = Array.from({ length: 1001 }, (_, i) => `~A_B${i + 1}`).join(',');
    const tooMany = await author.get(`/profiles?ids=${encodeURIComponent(many)}`);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body).toMatchObject({ name: 'ValidationError', status: 400 });
    expect((await author.get(`/profiles?ids=${encodeURIComponent(ada.id)}&id=${encodeURIComponent(ada.id)}`)).status).toBe(400);
  });
});
