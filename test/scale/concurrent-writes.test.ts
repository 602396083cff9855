/**
 * Writes that arrive at the same moment, as they do when a pool of connections (PostgreSQL, or
 * several processes) serves them: each group of requests below is sent at once through the real
 * HTTP API, and the outcome must be exactly what sending them one after another would give:
 * no 500, nothing lost, numbers and ids handed out once each, every try counted.
 * Run on SQLite and on PostgreSQL (`DATABASE_URL` set for the run).
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdfBytes, submissionContent, SUBMISSION, venueWithAuthor } from '../attachments/helpers.ts';
import { cookieHeader } from '../helpers/cookies.ts';
import { dropTestDatabase } from '../helpers/database.ts';
import { Client, sendMultipart } from '../helpers/http.ts';
import { readOutbox } from '../helpers/outbox.ts';
import { startServer, tempDir, type TestServer } from '../helpers/server.ts';
import { createActiveUser, HISTORY, loggedIn, PASSWORD, registerAndGetToken } from '../helpers/users.ts';
import { authorizationRequest, registerClient, relyingParty } from '../oidc/helpers.ts';
import { venueConfig } from '../helpers/venue.ts';
import { loopback, sendFrom } from './from-address.ts';

/** Two servers on one database, hundreds of requests at once. */
const LONG = { timeout: 60_000 };

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

const statuses = (replies: Array<{ status: number }>) => replies.map((r) => r.status);
const count = (list: number[], status: number) => list.filter((s) => s === status).length;

/** The mails sent to an address, oldest first. */
async function mailsTo(address: string) {
  return (await readOutbox(server.dataDir)).filter((m) => m.to.toLowerCase() === address.toLowerCase());
}

/** The code of a mail (a confirmation's, or a merge's). */
function codeIn(text: string): string {
  const code = /code: (\d{6})/.exec(text)?.[1];
  if (!code) throw new Error(`no code in ${text}`);
  return code;
}

/** The code and the link token of an email-confirmation mail. */
function confirmation(text: string): { code: string; token: string } {
  const code = /code: (\d{6})/.exec(text)?.[1];
  const token = /token=([\w-]+)/.exec(text)?.[1];
  if (!code || !token) throw new Error(`no code or link in ${text}`);
  return { code, token };
}

describe('notes posted at once', () => {
  let author: Client;
  let authorId: string;
  let pdf: string;

  beforeAll(async () => {
    ({ author, authorId } = await venueWithAuthor(server));
    const upload = await sendMultipart(author, 'PUT', '/attachment', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'p.pdf', data: pdfBytes(2000) });
    expect(upload.status).toBe(200);
    pdf = (upload.body as { url: string }).url;
  });

  it('eight submissions posted at once to one invitation are all stored, numbered 1 to 8', async () => {
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, i) => author.post('/notes', { invitation: SUBMISSION, content: { ...submissionContent(authorId, pdf), title: { value: `Paper ${i}` } } })),
    );
    expect(statuses(replies)).toEqual(Array(8).fill(200));
    expect(replies.map((r) => r.body.number).sort((a: number, b: number) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const stored = await author.get(`/notes?invitation=${encodeURIComponent(SUBMISSION)}&sort=number:asc`);
    expect(stored.body.notes.map((n: { number: number }) => n.number)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('two revisions of different fields of one note, posted at once, both stay on the note', async () => {
    const posted = await author.post('/notes', { invitation: SUBMISSION, content: submissionContent(authorId, pdf) });
    expect(posted.status).toBe(200);
    const id: string = posted.body.id;
    const [title, abstract] = await Promise.all([
      author.post('/notes', { id, invitation: SUBMISSION, content: { title: { value: 'A better title' } } }),
      author.post('/notes', { id, invitation: SUBMISSION, content: { abstract: { value: 'A better abstract.' } } }),
    ]);
    expect([title.status, abstract.status]).toEqual([200, 200]);
    const note = (await author.get(`/notes?id=${id}`)).body.notes[0];
    expect(note.content.title).toEqual({ value: 'A better title' });
    expect(note.content.abstract).toEqual({ value: 'A better abstract.' });
    const edits = (await author.get(`/notes/edits?note.id=${id}`)).body.edits;
    expect(edits).toHaveLength(3);
    // The last revision holds both changes, whichever came second.
    expect(edits[2].content).toMatchObject({ title: { value: 'A better title' }, abstract: { value: 'A better abstract.' } });
  });
  it('a note deleted while a revision of it is posted stays deleted', async () => {
    const posted = await author.post('/notes', { invitation: SUBMISSION, content: submissionContent(authorId, pdf) });
    const id: string = posted.body.id;
    // Revisions on both sides of the deletion, so that one of them is likely under way while it happens.
    const revision = (n: number) => author.post('/notes', { id, invitation: SUBMISSION, content: { title: { value: `Revised while deleted ${n}` } } });
    const [before, deleted, ...after] = await Promise.all([revision(0), author.request('DELETE', `/notes?id=${id}`), revision(1), revision(2), revision(3)]);
    expect(deleted.status).toBe(200);
    // A revision that came before the deletion is kept; after it, the note is gone for it.
    for (const revised of [before, ...after]) expect([200, 404]).toContain(revised!.status);
    expect((await author.get(`/notes?id=${id}`)).status).toBe(404);
    const trash = (await author.get(`/notes?id=${id}&trash=true`)).body.notes[0];
    expect(trash.ddate).toEqual(expect.any(Number));
  });

  it('a venue created twice at once is created once', async () => {
    const admin = await createActiveUser(server, { role: 'superuser', fullname: 'Venue Twice' });
    const { client } = await loggedIn(server, admin.email);
    const replies = await Promise.all([1, 2].map(() => client.post('/venues', venueConfig('Twice.org/2027'))));
    expect(statuses(replies).sort()).toEqual([200, 400]);
    expect(replies.find((r) => r.status === 400)!.body.message).toBe('The venue Twice.org/2027 already exists');
  });
});

describe('sign-ups at once', () => {
  it('eight people with the same name signing up at once get ~Ada_Lovelace1 to ~Ada_Lovelace8', async () => {
    // From eight addresses, as eight people would: hashing and sign-up limits are per address.
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        sendFrom(loopback(i), server.url, 'POST', '/register', { token: 'dev-ok', email: `ada${i}@lovelace.example`, password: PASSWORD, fullname: 'Ada Lovelace' }),
      ),
    );
    expect(statuses(replies)).toEqual(Array(8).fill(200));
    expect(replies.map((r) => r.body.id as string).sort((a, b) => Number(a.slice(13)) - Number(b.slice(13)))).toEqual(
      Array.from({ length: 8 }, (_, i) => `~Ada_Lovelace${i + 1}`),
    );
    expect((await new Client(server.url).get('/tildeusername?fullname=Ada%20Lovelace')).body).toEqual({ username: '~Ada_Lovelace9' });
  });

  it('two sign-ups with one address at once make one profile; the address is told of the other', async () => {
    const replies = await Promise.all(
      [0, 1].map((i) => sendFrom(loopback(50 + i), server.url, 'POST', '/register', { token: 'dev-ok', email: 'same-address@example.org', password: PASSWORD, fullname: 'Same Address' })),
    );
    expect(statuses(replies)).toEqual([200, 200]);
    expect(replies.map((r) => r.body.id).sort()).toEqual(['~Same_Address1', '~Same_Address2']);
    const subjects = (await mailsTo('same-address@example.org')).map((m) => m.subject).sort();
    expect(subjects).toEqual(['Sign-up attempt with your email address', 'Signup confirmation']);
  });

  it('profiles activated at once that each add the same new name get distinct usernames for it', async () => {
    const pending = await Promise.all(
      ['Marie Curie', 'Lise Meitner', 'Emmy Noether', 'Chien Wu'].map((fullname, i) => registerAndGetToken(server, { email: `shared-name${i}@example.org`, fullname })),
    );
    const replies = await Promise.all(
      pending.map(({ id, token }) =>
        new Client(server.url).request('PUT', `/activate/${token}`, {
          content: {
            history: HISTORY,
            names: [
              { fullname: id, username: id, preferred: true },
              { first: 'Shared', last: 'Name' },
            ],
          },
        }),
      ),
    );
    expect(statuses(replies)).toEqual([200, 200, 200, 200]);
    const usernames = replies.map((r) => (r.body.user.profile.usernames as string[]).filter((u) => u.startsWith('~Shared_Name'))).flat();
    expect(usernames.sort()).toEqual(['~Shared_Name1', '~Shared_Name2', '~Shared_Name3', '~Shared_Name4']);
  });
});

describe('one profile changed from several sides at once', () => {
  it('two addresses confirmed at once both end up on the profile', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    const asked = await Promise.all(['first-extra@example.org', 'second-extra@example.org'].map((alternate) => client.post('/user/confirm', { alternate })));
    expect(statuses(asked)).toEqual([200, 200]);
    const codes = await Promise.all(['first-extra@example.org', 'second-extra@example.org'].map(async (email) => confirmation((await mailsTo(email)).at(-1)!.text).code));
    const confirmed = await Promise.all(
      ['first-extra@example.org', 'second-extra@example.org'].map((email, i) => client.request('PUT', '/activatelink', { email, token: codes[i] })),
    );
    expect(statuses(confirmed)).toEqual([200, 200]);
    const me = (await client.get('/profiles')).body.profiles[0];
    expect([...me.content.emailsConfirmed].sort()).toEqual([user.email, 'first-extra@example.org', 'second-extra@example.org'].sort());
  });

  it('two codes asked at once for one address leave only the newer one usable, as asking twice in a row does', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    const asked = await Promise.all([client.post('/user/confirm', { alternate: 'asked-twice@example.org' }), client.post('/user/confirm', { alternate: 'asked-twice@example.org' })]);
    expect(statuses(asked)).toEqual([200, 200]);
    const mails = (await mailsTo('asked-twice@example.org')).map((m) => confirmation(m.text));
    expect(mails).toHaveLength(2);
    // Each mail's own link with its own code: asking again voids the code asked for before.
    const tried = [];
    for (const { code, token } of mails) {
      tried.push((await new Client(server.url).request('PUT', `/activatelink/${token}`, { email: 'asked-twice@example.org', token: code })).status);
    }
    expect(tried.sort()).toEqual([200, 400]);
  });

  it('a password reset racing an email confirmation keeps both the new password and the address', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    expect((await client.post('/user/confirm', { alternate: 'during-reset@example.org' })).status).toBe(200);
    const { code, token: link } = confirmation((await mailsTo('during-reset@example.org')).at(-1)!.text);
    expect((await new Client(server.url).post('/resettable', { id: user.email, token: 'dev-ok' })).status).toBe(200);
    const resetToken = /token=([\w-]+)/.exec((await mailsTo(user.email)).at(-1)!.text)?.[1];
    const [reset, confirmed] = await Promise.all([
      new Client(server.url).request('PUT', `/reset/${resetToken}`, { password: 'Raced-Reset-Pass7' }),
      new Client(server.url).request('PUT', `/activatelink/${link}`, { email: 'during-reset@example.org', token: code }),
    ]);
    expect([reset.status, confirmed.status]).toEqual([200, 200]);
    const { client: after } = await loggedIn(server, user.email, 'Raced-Reset-Pass7');
    expect((await after.get('/profiles')).body.profiles[0].content.emailsConfirmed).toContain('during-reset@example.org');
    // The reset ended the session that was open before it.
    expect((await client.get('/profiles')).status).toBe(401);
  });

  it('an activation link used twice at once activates the profile once', async () => {
    const { id, token } = await registerAndGetToken(server, { email: 'activated-twice@example.org', fullname: 'Twice Activated' });
    const replies = await Promise.all([1, 2].map(() => new Client(server.url).request('PUT', `/activate/${token}`, { content: { history: HISTORY } })));
    expect(statuses(replies).sort()).toEqual([200, 400]);
    const { client } = await loggedIn(server, id);
    const profile = (await client.get('/profiles')).body.profiles[0];
    expect(profile.pastStates.map((p: { state: string }) => p.state)).toEqual(['Inactive', 'Active Automatic']);
  });

  it('two profiles merging into each other at once: one merge happens, the other is refused', async () => {
    const [one, two] = await Promise.all([createActiveUser(server, { fullname: 'Merge One' }), createActiveUser(server, { fullname: 'Merge Two' })]);
    const [a, b] = await Promise.all([loggedIn(server, one.email), loggedIn(server, two.email)]);
    // Each asks to add the other's address: confirming it merges the other profile in.
    expect((await a.client.post('/user/confirm', { alternate: two.email })).status).toBe(200);
    expect((await b.client.post('/user/confirm', { alternate: one.email })).status).toBe(200);
    const codeForOne = codeIn((await mailsTo(two.email)).at(-1)!.text);
    const codeForTwo = codeIn((await mailsTo(one.email)).at(-1)!.text);
    const replies = await Promise.all([
      a.client.request('PUT', '/activatelink', { email: two.email, token: codeForOne }),
      b.client.request('PUT', '/activatelink', { email: one.email, token: codeForTwo }),
    ]);
    const got = statuses(replies);
    expect(count(got, 200)).toBe(1);
    // The loser's profile is merged away: its session has ended, or its merge is refused.
    expect([400, 401]).toContain(got.find((s) => s !== 200));
    const survivor = got[0] === 200 ? one : two;
    const { client } = await loggedIn(server, one.email);
    const profile = (await client.get('/profiles')).body.profiles[0];
    expect(profile.id).toBe(survivor.id);
    expect([...profile.content.emailsConfirmed].sort()).toEqual([one.email, two.email].sort());
  });

  it('two moderation decisions on one profile at once are both applied: limited and deleted', async () => {
    const moderator = await createActiveUser(server, { role: 'moderator', fullname: 'Busy Moderator' });
    const { client } = await loggedIn(server, moderator.email);
    const target = await createActiveUser(server, { fullname: 'Twice Moderated' });
    const decided = await Promise.all([
      client.post('/profile/moderate', { id: target.id, decision: 'limit' }),
      client.post('/profile/moderate', { id: target.id, decision: 'delete' }),
    ]);
    expect(statuses(decided)).toEqual([200, 200]);
    const profile = (await client.get(`/profiles?id=${encodeURIComponent(target.id)}`)).body.profiles[0];
    expect(profile.state).toBe('Limited');
    expect(profile.ddate).toEqual(expect.any(Number));
    expect(profile.pastStates.map((p: { state: string }) => p.state)).toEqual(['Active', 'Limited']);
  });

  it('moderation decisions on several profiles at once are each applied', async () => {
    const moderator = await createActiveUser(server, { role: 'moderator', fullname: 'Many Moderator' });
    const { client } = await loggedIn(server, moderator.email);
    const targets = await Promise.all(Array.from({ length: 4 }, (_, i) => createActiveUser(server, { fullname: `Blocked Person${'abcd'[i]}` })));
    const decided = await Promise.all(targets.map((t) => client.post('/profile/moderate', { id: t.id, decision: 'block' })));
    expect(statuses(decided)).toEqual([200, 200, 200, 200]);
    for (const t of targets) expect((await client.get(`/profiles?id=${encodeURIComponent(t.id)}`)).body.profiles[0].state).toBe('Blocked');
  });

  it("a moderator's block racing the person's own logout of other devices leaves the profile blocked and signed out", async () => {
    const moderator = await createActiveUser(server, { role: 'moderator', fullname: 'Blocking Moderator' });
    const { client: mod } = await loggedIn(server, moderator.email);
    const person = await createActiveUser(server, { fullname: 'Raced Person' });
    const { client } = await loggedIn(server, person.email);
    const [blocked, loggedOut] = await Promise.all([mod.post('/profile/moderate', { id: person.id, decision: 'block' }), client.post('/logout-all-devices')]);
    expect(blocked.status).toBe(200);
    // Before the block it succeeds; after it, the session is already ended.
    expect([200, 401]).toContain(loggedOut.status);
    expect((await mod.get(`/profiles?id=${encodeURIComponent(person.id)}`)).body.profiles[0].state).toBe('Blocked');
    expect((await client.get('/profiles')).status).toBe(401);
    expect((await client.post('/refreshToken')).status).toBe(401);
  });

  it('two impersonations started at once by a super user both work', async () => {
    const admin = await createActiveUser(server, { role: 'superuser', fullname: 'Support Person' });
    const { token } = await loggedIn(server, admin.email);
    const targets = await Promise.all([createActiveUser(server, { fullname: 'First Target' }), createActiveUser(server, { fullname: 'Second Target' })]);
    const started = await Promise.all(
      targets.map((t) => sendFrom('127.0.0.1', server.url, 'POST', '/impersonate', { groupId: t.id }, { authorization: `Bearer ${token}` })),
    );
    expect(statuses(started)).toEqual([200, 200]);
    for (const [i, t] of targets.entries()) {
      const as = new Client(server.url);
      as.bearer = started[i]!.body.token;
      expect((await as.get('/profiles')).body.profiles[0].id).toBe(t.id);
    }
  });
});

describe('rate limits counted across requests at once', () => {
  it('twenty wrong passwords at once for one account count twenty: ten are wrong, ten too many', async () => {
    const user = await createActiveUser(server, { fullname: 'Guessed At' });
    // From twenty addresses: the account's counter is the one under test, not the address's.
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) => sendFrom(loopback(100 + i), server.url, 'POST', '/login', { id: user.email, password: `Wrong-Guess-${i}` })),
    );
    const got = statuses(replies);
    expect([count(got, 400), count(got, 429)]).toEqual([10, 10]);
    // The right password is refused too: the account is locked.
    expect((await new Client(server.url).post('/login', { id: user.email, password: PASSWORD })).status).toBe(429);
  });

  it('wrong codes typed at once for one address are compared no more than the limit allows (twenty a day)', async () => {
    const address = 'guessed-at-once@example.org';
    // Five people each ask for a code to add the address (five is the most it is mailed in an
    // hour), then five wrong codes are typed against each token at once: twenty-five guesses.
    const people = await Promise.all(Array.from({ length: 5 }, (_, i) => createActiveUser(server, { fullname: `Guesser ${'abcde'[i]}` })));
    const clients = await Promise.all(people.map(async (p) => (await loggedIn(server, p.email)).client));
    for (const client of clients) expect((await client.post('/user/confirm', { alternate: address })).status).toBe(200);
    const codes = (await mailsTo(address)).map((m) => confirmation(m.text).code);
    const wrong = (code: string, n: number) => String((Number(code) + n) % 1_000_000).padStart(6, '0');
    const replies = await Promise.all(
      clients.flatMap((client, i) => [1, 2, 3, 4, 5].map((n) => client.request('PUT', '/activatelink', { email: address, token: wrong(codes[i]!, n) }))),
    );
    const got = statuses(replies);
    expect(count(got, 400) + count(got, 429)).toBe(25);
    // Every code compared is a wrong one recorded on its token: no more than twenty in all.
    const compared = await server.service.db('account_tokens').where({ kind: 'email', email: address }).sum({ n: 'attempts' }).first();
    expect(Number(compared?.n)).toBeLessThanOrEqual(20);
  });

  it('eight reset mails asked at once for one account: five are sent, three refused', async () => {
    const user = await createActiveUser(server, { fullname: 'Reset Often' });
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, i) => sendFrom(loopback(200 + i), server.url, 'POST', '/resettable', { id: user.email, token: 'dev-ok' })),
    );
    const got = statuses(replies);
    expect([count(got, 200), count(got, 429)]).toEqual([5, 3]);
    expect((await mailsTo(user.email)).filter((m) => m.subject === 'Password reset')).toHaveLength(5);
  });
});

describe('consents given at once', () => {
  it('two consents given at once to one application, for different scopes, keep every scope', async () => {
    await registerClient(server, 'two-tabs');
    const rp = await relyingParty(server, 'two-tabs');
    const person = await createActiveUser(server, { fullname: 'Two Tabs' });
    const { client } = await loggedIn(server, person.email);
    const cookie = cookieHeader(client);
    // Two tabs, each asking for its own scopes, each at the consent page.
    const interactions = await Promise.all(
      ['openid profile', 'openid email'].map(async (scope) => {
        const { url } = await authorizationRequest(rp, { scope });
        const res = await fetch(url, { redirect: 'manual', headers: { cookie } });
        return new URL(res.headers.get('location') ?? '').searchParams.get('interaction') ?? '';
      }),
    );
    const given = await Promise.all(interactions.map((interactionId) => client.post('/oidc/authorize/consent', { interactionId, approved: true })));
    expect(statuses(given)).toEqual([200, 200]);
    const consents = (await client.get('/oidc/consents')).body.consents;
    expect(consents).toHaveLength(1);
    expect([...consents[0].scopes].sort()).toEqual(['email', 'openid', 'profile']);
  });
});

describe('two processes on one database', () => {
  it('notes, sign-ups and wrong passwords sent at once to two servers sharing a database are numbered, named and counted once each', LONG, async () => {
    const dir = await tempDir();
    const first = await startServer({}, dir);
    // Behind one address, as an install's processes are: tokens name it as their issuer.
    const second = await startServer({ BASE_URL: first.url }, dir);
    try {
      const { author, authorId } = await venueWithAuthor(first);
      const upload = await sendMultipart(author, 'PUT', '/attachment', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'p.pdf', data: pdfBytes(2000) });
      const pdf = (upload.body as { url: string }).url;
      // The same signed-in author, half of the notes through each server.
      const other = new Client(second.url);
      for (const [k, v] of author.jar) other.jar.set(k, v);
      const notes = await Promise.all(
        Array.from({ length: 8 }, (_, i) => (i % 2 ? other : author).post('/notes', { invitation: SUBMISSION, content: { ...submissionContent(authorId, pdf), title: { value: `Paper ${i}` } } })),
      );
      expect(statuses(notes)).toEqual(Array(8).fill(200));
      expect(notes.map((r) => r.body.number).sort((a: number, b: number) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      const signUps = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          sendFrom(loopback(60 + i), (i % 2 ? second : first).url, 'POST', '/register', { token: 'dev-ok', email: `two-servers${i}@example.org`, password: PASSWORD, fullname: 'Two Servers' }),
        ),
      );
      expect(statuses(signUps)).toEqual(Array(6).fill(200));
      expect(signUps.map((r) => r.body.id as string).sort()).toEqual(Array.from({ length: 6 }, (_, i) => `~Two_Servers${i + 1}`));
      // The rate limits' counters are the database's: wrong passwords sent to both count together.
      const guessed = await createActiveUser(first, { fullname: 'Guessed Twice' });
      const logins = await Promise.all(
        Array.from({ length: 20 }, (_, i) => sendFrom(loopback(70 + i), (i % 2 ? second : first).url, 'POST', '/login', { id: guessed.email, password: `Wrong-Guess-${i}` })),
      );
      expect([count(statuses(logins), 400), count(statuses(logins), 429)]).toEqual([10, 10]);
    } finally {
      await second.close();
      await first.close();
      await rm(dir, { recursive: true, force: true });
      await dropTestDatabase(dir);
    }
  });
});
