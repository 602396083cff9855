/**
 * The web client's profile editor saving a person's emails, as it sends them: the page loads the
 * profile (`GET /profiles`) and lists its addresses as rows `{email, confirmed, preferred}`
 * (`lib/profiles.js:133-139` `formatProfileData`); the Emails section marks one preferred or
 * drops a row (`components/profile/EmailsSection.js`); on save `validateCleanProfile`
 * (`components/profile/ProfileEditor.js:200-457`) posts the rows as `content.emails` (strings) and
 * the row marked preferred as `content.preferredEmail`, and `saveProfile`
 * (`app/profile/edit/page.js:116-143`) sends `POST /profiles {id, content, signatures, readers}`
 * and tells the person it was saved unless the answer is an error, whose `details.path` picks the
 * section to flag (`content/emails…`, `ProfileEditor.js:718`). Each change is made as the emails
 * page's procedures make it, with their rules, notices and undo links
 * (`server/accounts/profile-editor.ts`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPostgres } from '../../db/postgres.ts';
import { lastMailTo, readOutbox } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { WebClient, type Answer } from './clients.ts';

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

interface EmailRow {
  email: string;
  confirmed: boolean;
  preferred: boolean;
}

/**
 * A person signed in on the web client, with a second address confirmed by its mailed code, as
 * the Emails section confirms one, and a third the profile holds unconfirmed (`pending`; the
 * Emails section's added rows waiting for their code are not held until confirmed).
 */
async function personWithTwoAddresses(): Promise<{ id: string; email: string; second: string; pending: string; web: WebClient }> {
  const user = await createActiveUser(server, { fullname: 'Melisa Bok' });
  const web = new WebClient(server.url);
  expect((await web.send('POST', '/login', { id: user.email, password: PASSWORD })).status).toBe(200);
  const second = `second-${user.email}`;
  expect((await web.send('POST', '/user/confirm', { alternate: second })).status).toBe(200);
  const code = /code: (\d{6})/.exec((await lastMailTo(server.dataDir, second)).text)?.[1];
  expect((await web.send('PUT', '/activatelink', { email: second, token: code })).status).toBe(200);
  const pending = `pending-${user.email}`;
  await server.service.db('profile_emails').insert({ email: pending, profile_id: user.id, confirmed: false, created_at: Date.now() });
  return { ...user, second, pending, web };
}

/** The page's profile: `GET /profiles`, its addresses as the Emails section's rows. */
async function load(web: WebClient): Promise<{ profile: any; rows: EmailRow[] }> {
  const profile = (await web.send('GET', '/profiles')).json.profiles[0];
  const rows = (profile.content.emails ?? []).map((email: string) => ({ email, confirmed: profile.content.emailsConfirmed.includes(email), preferred: email === profile.content.preferredEmail }));
  return { profile, rows };
}

/** `saveProfile` with what `validateCleanProfile` makes of the page's profile and its email rows. */
function save(web: WebClient, profile: any, rows: EmailRow[], headers: Record<string, string> = {}): Promise<Answer> {
  const content = profile.content;
  const profileContent = {
    names: content.names.map((n: { fullname: string; preferred?: boolean; username?: string }) => ({ fullname: n.fullname, preferred: n.preferred, ...(n.username ? { username: n.username } : {}) })),
    emails: rows.map((row) => row.email),
    history: (content.history ?? []).map(({ position, start, end, institution }: Record<string, unknown>) => ({ position, start, end, institution })),
    expertise: content.expertise ?? [],
    relations: content.relations ?? [],
    preferredEmail: rows.find((row) => row.preferred)?.email,
    homepage: 'https://melisa.example.org',
  };
  return web.send('POST', '/profiles', { id: profile.id, content: profileContent, signatures: [profile.id], readers: profile.readers }, headers);
}

/** The rows after the person clicks "Make Preferred" on `email`. */
const makePreferred = (rows: EmailRow[], email: string) => rows.map((row) => ({ ...row, preferred: row.email === email }));

const mailsTo = async (to: string) => (await readOutbox(server.dataDir)).filter((m) => m.to === to);

describe('the web client’s profile editor, saving emails', () => {
  it('makes the address marked preferred the preferred one, and tells the one it replaces', async () => {
    const { id, email, second, web } = await personWithTwoAddresses();
    const { profile, rows } = await load(web);
    const res = await save(web, profile, makePreferred(rows, second));
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect(res.json.content).toMatchObject({ preferredEmail: second, homepage: 'https://melisa.example.org' });
    expect((await load(web)).profile.content.preferredEmail).toBe(second);
    expect((await web.send('GET', `/profiles?id=${encodeURIComponent(id)}`)).json.profiles[0].content.preferredEmail).toBe(second);
    const notice = await lastMailTo(server.dataDir, email);
    expect(notice.subject).toBe('Your preferred email address was changed');
    expect(notice.text).toMatch(/emails\/undo\?token=/);
  });

  it('removes an unconfirmed address the person dropped from the list, as its Remove button does', async () => {
    const { email, second, pending, web } = await personWithTwoAddresses();
    const { profile, rows } = await load(web);
    expect(rows.map((row) => row.email)).toContain(pending);
    const res = await save(web, profile, rows.filter((row) => row.email !== pending));
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect(await server.service.db('profile_emails').where({ email: pending })).toEqual([]);
    expect(res.json.content).toMatchObject({ emailsConfirmed: [email, second], preferredEmail: email });
  });

  it('keeps a confirmed address left out of the list (a list read before it was confirmed, a script’s): the emails page removes those', async () => {
    const { email, second, web } = await personWithTwoAddresses();
    const { profile, rows } = await load(web);
    const before = await mailsTo(second);
    const res = await save(web, profile, makePreferred(rows, second).filter((row) => row.email !== email));
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect(res.json.content).toMatchObject({ emailsConfirmed: [email, second], preferredEmail: second });
    expect(await mailsTo(second)).toEqual(before);
  });

  it('leaves a row it does not hold (an address waiting for its code) to the confirmation, changing nothing', async () => {
    const { email, second, web } = await personWithTwoAddresses();
    const { profile, rows } = await load(web);
    const before = await mailsTo(email);
    const res = await save(web, profile, [...rows, { email: 'waiting@example.org', confirmed: false, preferred: false }]);
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect(res.json.content).toMatchObject({ emailsConfirmed: [email, second], preferredEmail: email });
    expect(await mailsTo(email)).toEqual(before);
  });

  it('refuses an address not confirmed yet as the preferred one, naming the Emails section, and saves nothing', async () => {
    const { id, email, pending, web } = await personWithTwoAddresses();
    const { profile, rows } = await load(web);
    const res = await save(web, profile, makePreferred(rows, pending));
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ name: 'ValidationError', details: { path: 'content/preferredEmail', reason: 'unconfirmed' } });
    const after = (await load(web)).profile;
    expect(after.content).toMatchObject({ preferredEmail: email });
    expect(after.content).not.toHaveProperty('homepage');
    expect(await server.service.db('audit_log').where({ target: id, action: 'profile:update' })).toEqual([]);
  });

  it('writes nothing of a save whose email change fails after its content (one transaction)', async () => {
    const { id, email, second, web } = await personWithTwoAddresses();
    const { profile, rows } = await load(web);
    const db = server.service.db;
    // The change of preferred address fails as it is written, after the save's new content.
    if (isPostgres(db)) {
      await db.raw("create function refuse_preferred() returns trigger language plpgsql as $$ begin if new.action = 'email:preferred' then raise exception 'refused for the test'; end if; return new; end $$");
      await db.raw('create trigger refuse_preferred before insert on audit_log for each row execute function refuse_preferred()');
    } else {
      await db.raw("create trigger refuse_preferred before insert on audit_log when new.action = 'email:preferred' begin select raise(abort, 'refused for the test'); end");
    }
    const before = await mailsTo(email);
    let res: Answer;
    try {
      res = await save(web, profile, makePreferred(rows, second));
    } finally {
      await db.raw('drop trigger refuse_preferred' + (isPostgres(db) ? ' on audit_log' : ''));
      if (isPostgres(db)) await db.raw('drop function refuse_preferred()');
    }
    expect(res.status).toBe(500);
    const after = (await load(web)).profile;
    expect(after.content).toMatchObject({ preferredEmail: email });
    expect(after.content).not.toHaveProperty('homepage');
    expect(await db('audit_log').where({ target: id, action: 'profile:update' })).toEqual([]);
    expect(await mailsTo(email)).toEqual(before);
  });

  it('keeps an address dropped from the list that was confirmed while the save ran (its code entered in another tab)', async () => {
    const { id, pending, web } = await personWithTwoAddresses();
    const { profile, rows } = await load(web);
    const db = server.service.db;
    // The code is entered at the moment the save writes its content: after its checks, before its removals.
    const confirm = `update profile_emails set confirmed = ${isPostgres(db) ? 'true' : '1'} where email = '${pending}'`;
    if (isPostgres(db)) {
      await db.raw(`create function confirm_pending() returns trigger language plpgsql as $$ begin if new.action = 'profile:update' then ${confirm}; end if; return new; end $$`);
      await db.raw('create trigger confirm_pending after insert on audit_log for each row execute function confirm_pending()');
    } else {
      await db.raw(`create trigger confirm_pending after insert on audit_log when new.action = 'profile:update' begin ${confirm}; end`);
    }
    let res: Answer;
    try {
      res = await save(web, profile, rows.filter((row) => row.email !== pending));
    } finally {
      await db.raw('drop trigger confirm_pending' + (isPostgres(db) ? ' on audit_log' : ''));
      if (isPostgres(db)) await db.raw('drop function confirm_pending()');
    }
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect(await db('profile_emails').where({ email: pending }).first()).toMatchObject({ profile_id: id });
    expect(await db('audit_log').where({ target: id, action: 'email:removed' })).toEqual([]);
    expect(await mailsTo(pending)).toEqual([]);
  });

  it('refuses a change of emails sent with the access token alone, not the session’s refresh cookie, as the emails page does', async () => {
    const { email, second, web } = await personWithTwoAddresses();
    const { profile, rows } = await load(web);
    const token = (await web.send('POST', '/refreshToken')).json.token as string;
    // As `api-client.js` sends a call given `{accessToken}` (its server's): the header, no cookie.
    const bearer = new WebClient(server.url);
    const auth = { Authorization: `Bearer ${token}` };
    const preferred = await save(bearer, profile, makePreferred(rows, second), auth);
    expect(preferred.status).toBe(403);
    expect(preferred.json).toMatchObject({ name: 'ForbiddenError', details: { path: 'content/preferredEmail' } });
    const removed = await save(bearer, profile, rows.filter((row) => !row.email.startsWith('pending-')), auth);
    expect(removed.status).toBe(403);
    expect(removed.json).toMatchObject({ name: 'ForbiddenError', details: { path: 'content/emails' } });
    expect((await load(web)).profile.content).toMatchObject({ emailsConfirmed: [email, second], preferredEmail: email });
    // Posting its emails as they are is no change of them: the rest is saved.
    expect((await save(bearer, profile, rows, auth)).status).toBe(200);
  });
});
