/**
 * The Python client's account methods, request by request as `openreview/api/client.py` (and
 * `openreview/tools.py`, `tests/conftest.py`) of openreview-py build them, and what the client
 * then reads from each answer. Lines cited are of client.py unless another file is named.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastMailTo } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { PythonClient } from './clients.ts';

let server: TestServer;

/** The payload of a JWT, read without checking it, as the client does with `jwt.decode(…, verify_signature=False)`. */
function payloadOf(token: string): Record<string, any> {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8'));
}

/** The activation link's token from the sign-up mail. */
async function activationToken(email: string): Promise<string> {
  const mail = await lastMailTo(server.dataDir, email);
  const token = /token=([\w-]+)/.exec(mail.text)?.[1];
  if (!token) throw new Error(`no activation link in: ${mail.text}`);
  return token;
}

beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

describe('the Python client, on accounts', () => {
  let profileId: string;

  it('register_user sends {email, fullname, password} with no human-verification token and reads id (client.py:322-343)', async () => {
    const guest = new PythonClient(server.url);
    const res = await guest.send('POST', '/register', { json: { email: 'melisa@example.org', fullname: 'Melisa Bok', password: PASSWORD } });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ id: '~Melisa_Bok1', status: 'ok' });
    profileId = res.json.id;
  });

  it('get_activatable reads activatable.token and activatable.user.profile.id (client.py:458-462)', async () => {
    const token = await activationToken('melisa@example.org');
    const res = await new PythonClient(server.url).send('GET', `/activatable/${token}`);
    expect(res.status).toBe(200);
    expect(res.json.activatable).toMatchObject({ token, user: { id: 'melisa@example.org', profile: { id: profileId } } });
  });

  it('a new profile shows relations and expertise as lists, empty, as both clients read them (web: components/profile/ProfileEditor.js:213; openreview-py: tests/test_profile_management.py:1690)', async () => {
    const token = await activationToken('melisa@example.org');
    const activatable = await new PythonClient(server.url).send('GET', `/activatable/${token}`);
    expect(activatable.json.profile.content).toMatchObject({ relations: [], expertise: [] });
  });

  it("after get_activatable, which keeps the activation token as the client's bearer, confirm_alternate_email and activate_email_with_token still work as a guest's (client.py:392-420, 458-462)", async () => {
    const python = new PythonClient(server.url);
    const registered = await python.send('POST', '/register', { json: { email: 'alan@example.org', fullname: 'Alan Turing', password: PASSWORD } });
    const alan = String(registered.json.id);
    const token = await activationToken('alan@example.org');
    expect((await python.send('GET', `/activatable/${token}`)).status).toBe(200);
    python.token = token;
    const asked = await python.send('POST', `/user/confirm/${token}`, { json: { username: alan, alternate: 'alan@cam.example.org' } });
    expect(asked.status, JSON.stringify(asked.json)).toBe(200);
    const mail = await lastMailTo(server.dataDir, 'alan@cam.example.org');
    const code = /code: (\d{6})/.exec(mail.text)?.[1] ?? '';
    const confirmed = await python.send('PUT', `/activatelink/${token}`, { json: { email: 'alan@cam.example.org', token: code } });
    expect(confirmed.status, JSON.stringify(confirmed.json)).toBe(200);
    expect(confirmed.json).toEqual({ confirmedEmail: 'alan@cam.example.org' });
    // Any other bearer that is not a session is still refused, as everywhere.
    python.token = 'not-a-session';
    expect((await python.send('POST', `/user/confirm/${token}`, { json: { username: alan, alternate: 'alan@other.example.org' } })).status).toBe(401);
  });

  it('activate_user sends history with institution {country, domain} and end null, and reads token and user.profile.id (client.py:345-378; tests/conftest.py:33-66)', async () => {
    const token = await activationToken('melisa@example.org');
    const guest = new PythonClient(server.url);
    const content = {
      names: [{ fullname: 'Melisa Bok', username: profileId, preferred: true }],
      emails: ['melisa@example.org'],
      preferredEmail: 'melisa@example.org',
      homepage: 'https://MelisaBok1700000000.example.org',
      history: [{ position: 'PhD Student', start: 2017, end: null, institution: { country: 'US', domain: 'example.org' } }],
    };
    const res = await guest.send('PUT', `/activate/${token}`, { json: { content } });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ token: expect.any(String), user: { profile: { id: profileId } } });
  });

  it('a name posted back without its username or fullname keeps the username it has, and gets the full name the web client reads (conftest-style activation; client.py:360-368)', async () => {
    const guest = new PythonClient(server.url);
    const registered = await guest.send('POST', '/register', { json: { email: 'ada@example.org', fullname: 'Ada Lovelace', password: PASSWORD } });
    const token = await activationToken('ada@example.org');
    const res = await guest.send('PUT', `/activate/${token}`, {
      json: { content: { names: [{ first: 'Ada', last: 'Lovelace', preferred: true }], history: [{ position: 'Countess', start: 2019, end: null, institution: { domain: 'example.org' } }] } },
    });
    expect(res.status).toBe(200);
    expect(res.json.user.profile).toMatchObject({ id: registered.json.id, usernames: [registered.json.id], preferredId: registered.json.id, fullname: 'Ada Lovelace' });
    // The web client's profile editor keeps only names with a fullname (ProfileEditor.js:204).
    const stored = await guest.send('GET', '/profiles', { headers: { authorization: `Bearer ${res.json.token}` } });
    expect(stored.json.profiles[0].content.names).toEqual([{ first: 'Ada', last: 'Lovelace', fullname: 'Ada Lovelace', username: registered.json.id, preferred: true }]);
  });

  it('login_user sends {id, password, expiresIn: null}, with an email or a tilde id, and reads token and user.profile.id (client.py:293-320)', async () => {
    for (const id of ['melisa@example.org', profileId]) {
      const client = new PythonClient(server.url);
      const res = await client.send('POST', '/login', { json: { id, password: PASSWORD, expiresIn: null } });
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ token: expect.any(String), user: { profile: { id: profileId } } });
    }
    const timed = await new PythonClient(server.url).send('POST', '/login', { json: { id: profileId, password: PASSWORD, expiresIn: 4000 } });
    expect(payloadOf(timed.json.token).exp - payloadOf(timed.json.token).iat).toBe(4000);
  });

  it('a missing id or password is named as the real platform names it (tests/test_client.py:96-113)', async () => {
    const client = new PythonClient(server.url);
    const noId = await client.send('POST', '/login', { json: { id: null, password: null, expiresIn: null } });
    expect(noId.status).toBe(400);
    expect(JSON.stringify(noId.json)).toContain('id cannot be empty or missing');
    const noPassword = await client.send('POST', '/login', { json: { id: 'melisa@example.org', password: null, expiresIn: null } });
    expect(JSON.stringify(noPassword.json)).toContain('password cannot be empty or missing');
    const wrong = await client.send('POST', '/login', { json: { id: 'melisa@example.org', password: 'Wrong-Password-1', expiresIn: null } });
    expect(wrong.json).toMatchObject({ status: 400, message: expect.stringContaining('Invalid username or password') });
  });

  it('OpenReviewClient(token=…) finds the profile id in the token payload and reads the profile (client.py:141-157)', async () => {
    const login = await new PythonClient(server.url).send('POST', '/login', { json: { id: 'melisa@example.org', password: PASSWORD, expiresIn: null } });
    const payload = payloadOf(login.json.token);
    const user = payload.user ?? payload;
    const id = user.profile?.id ?? user.id;
    expect(id).toBe(profileId);
    expect(JSON.stringify(payload)).not.toMatch(/password|refresh/i);
    const client = new PythonClient(server.url);
    client.token = `${login.json.token}`;
    const res = await client.send('GET', '/profiles', { params: { id } });
    expect(res.json.profiles[0].id).toBe(profileId);
  });

  it('tools.get_profile(client, email) for an unknown email reads {profiles: []} (tools.py:152-179; client.py:588-613)', async () => {
    const admin = await createActiveUser(server, { role: 'superuser', fullname: 'Super User' });
    const client = new PythonClient(server.url);
    client.token = (await client.send('POST', '/login', { json: { id: admin.email, password: PASSWORD, expiresIn: null } })).json.token;
    expect((await client.send('GET', '/profiles', { params: { email: 'nobody@example.org' } })).json).toEqual({ profiles: [] });
    const known = await client.send('GET', '/profiles', { params: { email: 'MELISA@example.org'.toLowerCase() } });
    expect(known.json.profiles[0]).toMatchObject({ id: profileId, content: { emails: ['melisa@example.org'] } });
  });

  it("tools.get_profile(client, id) for an unknown or deleted id reads {profiles: []}: get_profile raises its own ['Profile Not Found'], which tools turns into None (client.py:588-613; tools.py:175-178)", async () => {
    const client = new PythonClient(server.url);
    client.token = (await client.send('POST', '/login', { json: { id: 'melisa@example.org', password: PASSWORD, expiresIn: null } })).json.token;
    const unknown = await client.send('GET', '/profiles', { params: { id: '~John_Lasst1' } });
    expect(unknown.status).toBe(200);
    expect(unknown.json).toEqual({ profiles: [] });
    const gone = await createActiveUser(server, { fullname: 'Gone Away' });
    const moderator = new PythonClient(server.url);
    moderator.token = (await moderator.send('POST', '/login', { json: { id: (await createActiveUser(server, { role: 'moderator' })).email, password: PASSWORD, expiresIn: null } })).json.token;
    expect((await moderator.send('POST', '/profile/moderate', { json: { id: gone.id, decision: 'delete' } })).status).toBe(200);
    expect((await client.send('GET', '/profiles', { params: { id: gone.id } })).json).toEqual({ profiles: [] });
  });

  it('search_profiles by term, by first and last, and by ids, emails or confirmedEmails (client.py:688-745)', async () => {
    const client = new PythonClient(server.url);
    client.token = (await client.send('POST', '/login', { json: { id: 'ada@example.org', password: PASSWORD, expiresIn: null } })).json.token;
    const byTerm = await client.send('GET', '/profiles/search', { params: { term: 'Melisa', es: false } });
    expect(byTerm.json.profiles.map((p: { id: string }) => p.id)).toEqual([profileId]);
    const byName = await client.send('GET', '/profiles', { params: { first: 'Melisa', middle: null, last: 'Bok', es: false } });
    expect(byName.json.profiles.map((p: { id: string }) => p.id)).toEqual([profileId]);
    const searched = await client.send('GET', '/profiles/search', { params: { first: 'melisa', last: 'bok' } });
    expect(searched.json.profiles).toHaveLength(1);
    const ada = (await client.send('GET', '/profiles')).json.profiles[0].id;
    const byIds = await client.send('POST', '/profiles/search', { json: { ids: [profileId, '~Nobody_Here1', ada] } });
    // Sorted by id, as the real platform answers (tests/test_client.py:179-180).
    expect(byIds.json.profiles.map((p: { id: string }) => p.id)).toEqual([ada, profileId].sort());
    const byEmails = await client.send('POST', '/profiles/search', { json: { emails: ['melisa@example.org', 'nobody@example.org'] } });
    expect(byEmails.json.profiles).toEqual([expect.objectContaining({ id: profileId, email: 'melisa@example.org' })]);
    const byConfirmed = await client.send('POST', '/profiles/search', { json: { confirmedEmails: ['melisa@example.org'] } });
    expect(byConfirmed.json.profiles[0].confirmedEmails).toContain('melisa@example.org');
  });

  it('every error carries details.reqId, the X-Request-Id of the answer, and a 429 says Retry-After (client.py:29-47)', async () => {
    const client = new PythonClient(server.url);
    const missing = await client.send('GET', '/profiles');
    expect(missing.status).toBe(401);
    expect(missing.json.details.reqId).toBe(missing.headers.get('x-request-id'));
    let last = missing;
    for (let i = 0; i < 7 && last.status !== 429; i += 1) last = await client.send('POST', '/activatable', { json: { id: 'ada@example.org' } });
    expect(last.status).toBe(429);
    expect(Number(last.headers.get('retry-after'))).toBe(last.json.details.retryAfter);
  });
});
