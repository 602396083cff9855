/**
 * `accounts.updateProfile` (`server/accounts/profile-editor.ts`, `shared/schemas/profile-edit.ts`),
 * called without HTTP: who may edit which profile, names and their tilde ids, the per-kind link
 * checks, the date of birth's correction window, emails changed only by their own procedures'
 * rules (the web client's saves: test/compat/web-client-profile-editor.test.ts), and that a
 * refused edit changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkProfileLink, PROFILE_LINK_KINDS, type Profile, type SessionResult, type UpdateProfileInput } from '../../shared/index.ts';
import { DOB_CORRECTION_DAYS } from '../../server/accounts/profile-editor.ts';
import { startServices, type TestServices } from '../helpers/caller.ts';
import { TestClock } from '../helpers/clock.ts';
import { PASSWORD } from '../helpers/users.ts';

const clock = new TestClock();
let t: TestServices;
let counter = 0;

beforeAll(async () => {
  t = await startServices({}, { now: clock.now });
});
afterAll(() => t.close());

interface Person {
  id: string;
  email: string;
  call: ReturnType<TestServices['caller']>;
}

/** An active person (with a role, if asked) and a caller signed in as them. */
async function person(fullname = 'Ada Lovelace', role?: 'superuser'): Promise<Person> {
  counter += 1;
  const email = `editor${counter}-${process.pid}@example.org`;
  const id = await t.services.signUp.createUser({ email, password: PASSWORD, fullname, state: 'Active', role });
  return { id, email, call: await signedIn(email) };
}

/** A caller with a new session: after the clock moves past a session's hour. */
async function signedIn(email: string): Promise<Person['call']> {
  const session = (await t.caller().accounts.login({ id: email, password: PASSWORD })) as SessionResult;
  return t.caller({ accessToken: session.token });
}

async function own(p: Person): Promise<Profile> {
  const [profile] = (await p.call.accounts.profiles()).profiles;
  if (!profile) throw new Error('no profile');
  return profile;
}

/** An address added to the profile and waiting for its code: what a profile save may drop. */
async function pendingAddress(p: Pick<Person, 'id' | 'email'>): Promise<string> {
  const email = `pending-${p.email}`;
  await t.services.db('profile_emails').insert({ email, profile_id: p.id, confirmed: false, created_at: Date.now() });
  return email;
}

/** What a profile's rows are, to show a refused edit wrote nothing. */
async function rowsOf(id: string) {
  const db = t.services.db;
  return {
    profile: await db('profiles').where({ id }).first(),
    usernames: await db('profile_usernames').where({ profile_id: id }).orderBy('username'),
    audit: await db('audit_log').where({ target: id, action: 'profile:update' }),
  };
}

const HISTORY = [{ position: 'PhD Student', institution: { name: 'Massachusetts Institute of Technology', domain: 'mit.edu' }, start: 2021 }];

/** The content a person has, with changes. */
function edited(profile: Profile, change: Partial<UpdateProfileInput['content']>): UpdateProfileInput {
  return { signatures: [profile.id], content: { ...profile.content, names: profile.content.names ?? [], ...change } as UpdateProfileInput['content'] };
}

describe('editing one’s own profile', () => {
  it('adds a name with its own tilde id, a position, links and expertise; tmdate moves and the change is audited', async () => {
    const ada = await person();
    const before = await own(ada);
    clock.advance(60_000);
    const answer = await ada.call.accounts.updateProfile(
      edited(before, {
        names: [...(before.content.names ?? []).map((n) => ({ ...n, preferred: false })), { first: 'Ada', last: 'Byron', preferred: true }],
        history: [{ position: 'PhD Student', institution: { name: 'Massachusetts Institute of Technology', domain: 'MIT.edu' }, start: 2021 }],
        orcid: '0000-0002-1825-0097',
        dblp: 'dblp.org/pid/12/3456',
        expertise: [{ keywords: ['analytical engines', 'poetry'], start: 2020 }],
        pronouns: 'she/her',
        gender: '',
      }),
    );
    expect(answer.content.names).toEqual([
      { first: 'Ada', middle: '', last: 'Lovelace', fullname: 'Ada Lovelace', username: ada.id },
      { first: 'Ada', last: 'Byron', fullname: 'Ada Byron', username: '~Ada_Byron1', preferred: true },
    ]);
    expect(answer.content).toMatchObject({
      history: [{ position: 'PhD Student', institution: { name: 'Massachusetts Institute of Technology', domain: 'mit.edu' }, start: 2021 }],
      orcid: 'https://orcid.org/0000-0002-1825-0097',
      dblp: 'https://dblp.org/pid/12/3456',
      expertise: [{ keywords: ['analytical engines', 'poetry'], start: 2020 }],
      pronouns: 'she/her',
      emails: [ada.email],
    });
    expect(answer.content).not.toHaveProperty('gender');
    expect(answer.tmdate).toBeGreaterThan(before.tmdate ?? 0);
    expect(await own(ada)).toEqual(answer);
    expect((await ada.call.accounts.me()).usernames).toEqual([ada.id, '~Ada_Byron1'].sort());
    const [line] = (await rowsOf(ada.id)).audit;
    expect(line).toMatchObject({ actor: ada.id, action: 'profile:update' });
    expect(JSON.parse(line.details).fields).toEqual(['dblp', 'expertise', 'history', 'names', 'orcid', 'pronouns']);
  });

  it('ignores addresses the profile does not hold, as emails or as the preferred one, and emailsConfirmed', async () => {
    const ada = await person();
    const before = await own(ada);
    const answer = await ada.call.accounts.updateProfile(edited(before, { emails: [ada.email, 'thief@example.org'], emailsConfirmed: ['thief@example.org'], preferredEmail: 'thief@example.org' }));
    expect(answer.content).toMatchObject({ emails: [ada.email], emailsConfirmed: [ada.email], preferredEmail: ada.email });
    expect(await t.services.db('profile_emails').where({ email: 'thief@example.org' })).toEqual([]);
  });

  it('refuses a change of its emails the emails’ own rules refuse (here: an access token alone), naming the field, changing nothing', async () => {
    const ada = await person();
    await pendingAddress(ada);
    const before = await own(ada);
    const rows = await rowsOf(ada.id);
    await expect(ada.call.accounts.updateProfile(edited(before, { emails: [ada.email], pronouns: 'she/her' }))).rejects.toMatchObject({
      cause: { name: 'ForbiddenError', details: { path: 'content/emails' } },
    });
    expect(await rowsOf(ada.id)).toEqual(rows);
  });

  it('refuses a name given twice in one post, which would take an id per copy, changing nothing', async () => {
    const ada = await person('Ada Twice');
    const before = await own(ada);
    const rows = await rowsOf(ada.id);
    const copies = Array.from({ length: 5 }, () => ({ first: 'Zed', last: 'Zed' }));
    await expect(ada.call.accounts.updateProfile(edited(before, { names: [...(before.content.names ?? []), ...copies] }))).rejects.toMatchObject({
      cause: { name: 'ValidationError', details: { path: 'content/names/2/first' } },
    });
    await expect(ada.call.accounts.updateProfile(edited(before, { names: [...(before.content.names ?? []), { fullname: 'Ada Twice' }] }))).rejects.toMatchObject({
      cause: { name: 'ValidationError', details: { path: 'content/names/1/first' } },
    });
    expect(await rowsOf(ada.id)).toEqual(rows);
  });

  it('gives a removed name its id back when it is added again, and never removes the name of the profile id', async () => {
    const ada = await person('Ada Countess');
    const before = await own(ada);
    const added = await ada.call.accounts.updateProfile(edited(before, { names: [...(before.content.names ?? []), { fullname: 'Augusta King' }] }));
    const king = added.content.names?.[1]?.username;
    expect(king).toMatch(/^~Augusta_King\d+$/);
    const removed = await ada.call.accounts.updateProfile(edited(added, { names: before.content.names ?? [] }));
    expect(removed.content.names).toHaveLength(1);
    const again = await ada.call.accounts.updateProfile(edited(removed, { names: [...(removed.content.names ?? []), { first: 'Augusta', last: 'King' }] }));
    expect(again.content.names?.[1]?.username).toBe(king);
    await expect(ada.call.accounts.updateProfile(edited(again, { names: [{ fullname: 'Augusta King', username: king }] }))).rejects.toMatchObject({
      cause: { name: 'ValidationError', details: { path: 'content/names' } },
    });
  });

  it('refuses another profile’s username, and a name that no longer spells its own, changing nothing', async () => {
    const ada = await person();
    const grace = await person('Grace Hopper');
    const before = await own(ada);
    const rows = await rowsOf(ada.id);
    await expect(ada.call.accounts.updateProfile(edited(before, { names: [...(before.content.names ?? []), { fullname: 'Grace Hopper', username: grace.id }] }))).rejects.toMatchObject({
      cause: { name: 'ValidationError', details: { path: 'content/names/1/username' } },
    });
    await expect(ada.call.accounts.updateProfile(edited(before, { names: [{ first: 'Grace', last: 'Hopper', username: ada.id }] }))).rejects.toMatchObject({
      cause: { name: 'ValidationError', details: { path: 'content/names/0/first' } },
    });
    expect(await rowsOf(ada.id)).toEqual(rows);
  });

  it('refuses bad input with every field named, and writes nothing', async () => {
    const ada = await person();
    const before = await own(ada);
    const rows = await rowsOf(ada.id);
    const error = await ada.call.accounts
      .updateProfile(
        edited(before, {
          names: [{ first: 'Ada', last: 'Lovelace', username: ada.id, preferred: true }, { first: 'R2D2', last: 'Robot' }],
          history: [{ position: '', institution: { domain: 'not a domain' }, start: 2020, end: 2010 }],
          linkedin: 'https://example.org/in/ada',
          relations: [{ relation: 'PhD Advisor', name: 'Charles Babbage' }],
          pronouns: 'x'.repeat(51),
        }),
      )
      .catch((e: unknown) => e);
    const paths = ((error as { cause: { errors: Array<{ details: { path: string } }> } }).cause.errors ?? []).map((e) => e.details.path);
    expect(paths).toEqual(
      expect.arrayContaining(['content/names/1/first', 'content/history/0/position', 'content/history/0/institution/domain', 'content/history/0/end', 'content/linkedin', 'content/relations/0/email', 'content/pronouns']),
    );
    expect(await rowsOf(ada.id)).toEqual(rows);
  });
});

describe('who may edit which profile', () => {
  it('refuses a person editing someone else’s profile, whether it exists or not', async () => {
    const ada = await person();
    const grace = await person('Grace Hopper');
    const theirs = await own(grace);
    const rows = await rowsOf(grace.id);
    for (const id of [grace.id, '~No_Body1']) {
      await expect(ada.call.accounts.updateProfile({ ...edited(theirs, { homepage: 'https://evil.example.org' }), id })).rejects.toMatchObject({ cause: { name: 'ForbiddenError', status: 403 } });
    }
    await expect(ada.call.accounts.updateProfile({ ...edited(theirs, {}), referent: grace.id })).rejects.toMatchObject({ cause: { name: 'ForbiddenError' } });
    expect(await rowsOf(grace.id)).toEqual(rows);
  });

  it('lets a super user edit anyone’s profile, answered as the super user sees it; an unknown id is a 404', async () => {
    const admin = await person('Super User', 'superuser');
    const grace = await person('Grace Hopper');
    const theirs = await own(grace);
    const answer = await admin.call.accounts.updateProfile({ ...edited(theirs, { homepage: 'https://grace.example.org', history: HISTORY }), id: grace.id });
    expect(answer).toMatchObject({ id: grace.id, content: { homepage: 'https://grace.example.org', emails: [grace.email] } });
    expect(answer).not.toHaveProperty('lastLogIn');
    const [line] = (await rowsOf(grace.id)).audit;
    expect(line).toMatchObject({ actor: admin.id, target: grace.id });
    await expect(admin.call.accounts.updateProfile({ ...edited(theirs, {}), id: '~No_Body1' })).rejects.toMatchObject({ cause: { name: 'NotFoundError' } });
  });

  it('refuses a super user’s edit, or an impersonation’s, that would change the person’s emails: only the person changes them', async () => {
    const admin = await person('Super User', 'superuser');
    const grace = await person('Grace Hopper');
    await pendingAddress(grace);
    const theirs = await own(grace);
    const rows = await rowsOf(grace.id);
    await expect(admin.call.accounts.updateProfile({ ...edited(theirs, { emails: [grace.email] }), id: grace.id })).rejects.toMatchObject({
      cause: { name: 'ForbiddenError', details: { path: 'content/emails' } },
    });
    const { token } = await admin.call.accounts.impersonate({ groupId: grace.id });
    await expect(t.caller({ accessToken: token }).accounts.updateProfile(edited(theirs, { emails: [grace.email] }))).rejects.toMatchObject({
      cause: { name: 'ForbiddenError', message: 'Emails cannot be changed while impersonating', details: { path: 'content/emails' } },
    });
    expect((await rowsOf(grace.id)).profile).toEqual(rows.profile);
    // Its emails posted back as they are change nothing of them.
    expect((await admin.call.accounts.updateProfile({ ...edited(theirs, { pronouns: 'she/her' }), id: grace.id })).content).toMatchObject({ emails: theirs.content.emails, pronouns: 'she/her' });
  });

  it('lets a super user’s impersonation edit the person’s profile (audited as the super user’s), and refuses a read-only one', async () => {
    const admin = await person('Super User', 'superuser');
    const helper = await person('Helpful Colleague');
    const grace = await person('Grace Hopper');
    const asGrace = async (who: Person) => {
      const { token } = await who.call.accounts.impersonate({ groupId: grace.id });
      return t.caller({ accessToken: token });
    };
    const theirs = await own(grace);
    const edited1 = await (await asGrace(admin)).accounts.updateProfile(edited(theirs, { pronouns: 'she/her' }));
    expect(edited1.content.pronouns).toBe('she/her');
    const [line] = (await rowsOf(grace.id)).audit;
    expect(line).toMatchObject({ actor: admin.id, target: grace.id });
    expect(JSON.parse(line.details)).toMatchObject({ fields: ['pronouns'], impersonating: grace.id });
    await admin.call.accounts.setImpersonators({ user: grace.id, impersonators: [helper.email] });
    const rows = await rowsOf(grace.id);
    await expect((await asGrace(helper)).accounts.updateProfile(edited(edited1, { pronouns: 'they/them' }))).rejects.toMatchObject({ cause: { name: 'ForbiddenError' } });
    expect(await rowsOf(grace.id)).toEqual(rows);
  });

  it('refuses a caller without a session', async () => {
    await expect(t.caller().accounts.updateProfile({ signatures: ['~A_B1'], content: { names: [{ fullname: 'A B' }] } })).rejects.toMatchObject({ cause: { status: 401 } });
  });
});

describe('the date of birth', () => {
  it('may be given, corrected within the window its first giving starts, and after it only by a super user', async () => {
    const ada = await person();
    const admin = await person('Super User', 'superuser');
    const given = await ada.call.accounts.updateProfile(edited(await own(ada), { yearOfBirth: 1990 }));
    expect(given).toMatchObject({ content: { yearOfBirth: 1990 }, dobTimestamp: given.tmdate });
    clock.advance((DOB_CORRECTION_DAYS - 1) * 86_400_000);
    ada.call = await signedIn(ada.email);
    const corrected = await ada.call.accounts.updateProfile(edited(given, { yearOfBirth: 1991 }));
    expect(corrected.content.yearOfBirth).toBe(1991);
    clock.advance((DOB_CORRECTION_DAYS + 1) * 86_400_000);
    ada.call = await signedIn(ada.email);
    admin.call = await signedIn(admin.email);
    // Posting the same date back is no change, and other fields still save.
    expect((await ada.call.accounts.updateProfile(edited(corrected, { pronouns: 'she/her' }))).content.pronouns).toBe('she/her');
    const rows = await rowsOf(ada.id);
    await expect(ada.call.accounts.updateProfile(edited(corrected, { yearOfBirth: 1985 }))).rejects.toMatchObject({
      cause: { name: 'ValidationError', details: { path: 'content/yearOfBirth', reason: 'dob-window-closed' } },
    });
    await expect(ada.call.accounts.updateProfile(edited(corrected, { yearOfBirth: undefined }))).rejects.toMatchObject({ cause: { details: { path: 'content/yearOfBirth' } } });
    expect(await rowsOf(ada.id)).toEqual(rows);
    const fixed = await admin.call.accounts.updateProfile({ ...edited(corrected, { yearOfBirth: 1985 }), id: ada.id });
    expect(fixed).toMatchObject({ content: { yearOfBirth: 1985 }, dobTimestamp: fixed.tmdate });
    expect(fixed.dobTimestamp).toBeGreaterThan(corrected.dobTimestamp ?? Infinity);
  });

  it('is shown to its owner, moderators and super users only, as the profile’s emails are', async () => {
    const ada = await person();
    const grace = await person('Grace Hopper');
    const admin = await person('Super User', 'superuser');
    await ada.call.accounts.updateProfile(edited(await own(ada), { yearOfBirth: 1990, dob: Date.UTC(1990, 4, 1) }));
    expect((await own(ada)).content).toMatchObject({ yearOfBirth: 1990, dob: Date.UTC(1990, 4, 1) });
    const [seenByOther] = (await grace.call.accounts.profiles({ id: ada.id })).profiles;
    expect(seenByOther?.content).not.toHaveProperty('yearOfBirth');
    expect(seenByOther?.content).not.toHaveProperty('dob');
    const [seenByAdmin] = (await admin.call.accounts.profiles({ id: ada.id })).profiles;
    expect(seenByAdmin?.content).toMatchObject({ yearOfBirth: 1990 });
  });

  it('refuses a year still to come, and a year of birth that is not the date of birth’s', async () => {
    const ada = await person();
    const before = await own(ada);
    await expect(ada.call.accounts.updateProfile(edited(before, { yearOfBirth: new Date(clock.now()).getUTCFullYear() + 1 }))).rejects.toMatchObject({ cause: { details: { path: 'content/yearOfBirth' } } });
    await expect(ada.call.accounts.updateProfile(edited(before, { yearOfBirth: 1990, dob: Date.UTC(1991, 4, 1) }))).rejects.toMatchObject({ cause: { details: { path: 'content/yearOfBirth' } } });
  });
});

describe('links, each checked for its kind', () => {
  const cases: Array<[kind: (typeof PROFILE_LINK_KINDS)[number], good: string[], bad: string[]]> = [
    ['homepage', ['https://ada.example.org', 'http://example.org/~ada', 'www.example.org'], ['javascript:alert(1)', 'ftp://example.org', 'https://user:pw@example.org', 'not a link']],
    ['dblp', ['https://dblp.org/pid/12/3456', 'https://dblp.uni-trier.de/pers/hd/l/Lovelace:Ada'], ['https://dblp.org/', 'https://example.org/pid/1', 'https://dblp.org.evil.example/pid/1']],
    ['orcid', ['0000-0002-1825-0097', 'https://orcid.org/0000-0002-1825-0097', 'http://orcid.org/0000-0001-5109-3700/', '0000-0002-1694-233x'], ['0000-0002-1825-0098', 'https://orcid.org/1234', 'https://example.org/0000-0002-1825-0097']],
    ['gscholar', ['https://scholar.google.com/citations?user=AbCdEf', 'https://scholar.google.co.uk/citations?hl=en&user=x1'], ['https://scholar.google.com/citations', 'https://scholar.google.com/scholar?q=ada', 'https://google.com/citations?user=x']],
    ['semanticScholar', ['https://www.semanticscholar.org/author/1741101', 'https://semanticscholar.org/author/Ada-Lovelace/1'], ['https://www.semanticscholar.org/paper/1', 'https://www.semanticscholar.org/author/']],
    ['aclanthology', ['https://aclanthology.org/people/a/ada-lovelace/'], ['https://aclanthology.org/P19-1001/', 'https://aclweb.org/people/a/ada']],
    ['linkedin', ['https://www.linkedin.com/in/ada-lovelace', 'https://uk.linkedin.com/in/ada'], ['https://www.linkedin.com/company/x', 'https://linkedin.example.org/in/ada']],
    ['wikipedia', ['https://en.wikipedia.org/wiki/Ada_Lovelace', 'https://fr.m.wikipedia.org/wiki/Ada_Lovelace'], ['https://wikipedia.org/wiki/Ada', 'https://en.wikipedia.org/w/index.php?title=Ada', 'https://en.wikipedia.org.evil.example/wiki/Ada']],
  ];

  it.each(cases)('%s: accepts its own site’s profile pages and refuses anything else in words', (kind, good, bad) => {
    for (const value of good) expect(checkProfileLink(kind, value), value).toMatchObject({ ok: true });
    for (const value of bad) expect(checkProfileLink(kind, value), value).toMatchObject({ ok: false, message: expect.stringMatching(/^[A-Z0-9].*[^.]$/) });
  });

  it('stores an ORCID iD as its address, and refuses a wrong link naming its field, changing nothing', async () => {
    const ada = await person();
    const before = await own(ada);
    expect((await ada.call.accounts.updateProfile(edited(before, { orcid: '0000-0002-1694-233x' }))).content.orcid).toBe('https://orcid.org/0000-0002-1694-233X');
    const rows = await rowsOf(ada.id);
    for (const kind of PROFILE_LINK_KINDS.filter((k) => k !== 'homepage')) {
      await expect(ada.call.accounts.updateProfile(edited(before, { [kind]: 'https://example.org/someone' }))).rejects.toMatchObject({ cause: { name: 'ValidationError', details: { path: `content/${kind}` } } });
    }
    expect(await rowsOf(ada.id)).toEqual(rows);
  });
});
