/**
 * The Python client's `post_profile(profile)` (openreview/api/client.py:974-990): it posts
 * `Profile.to_json()` (openreview/openreview.py `Profile.to_json`: invitation, signatures,
 * content, metaContent `{}` when empty, and id, tcdate, tmdate, tauthor, active, password,
 * readers, writers when set) of a profile it read with `get_profile`, and reads the answer with
 * `Profile.from_json`. Here the profile read back also carries what `GET /profiles` answers and
 * the spec's ProfileReference accepts (dobTimestamp, state, pastStates, lastLogIn, ddate).
 * Its `content.preferredEmail` and `content.emails` change the emails as the emails page does
 * (`server/accounts/profile-editor.ts`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastMailTo } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { PythonClient } from './clients.ts';

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

async function signedIn(email: string): Promise<PythonClient> {
  const client = new PythonClient(server.url);
  client.token = (await client.send('POST', '/login', { json: { id: email, password: PASSWORD, expiresIn: null } })).json.token;
  return client;
}

/** `Profile.to_json()` of a profile as `GET /profiles` answered it, with the fields the spec lets a client post back. */
function toJson(profile: Record<string, any>): Record<string, unknown> {
  const body: Record<string, unknown> = {
    invitation: profile.invitation ?? '~/-/profiles',
    signatures: profile.signatures,
    content: profile.content,
    metaContent: profile.metaContent ?? {},
  };
  for (const key of ['id', 'tcdate', 'tmdate', 'tauthor', 'active', 'password', 'readers', 'nonreaders', 'writers', 'dobTimestamp', 'state', 'pastStates', 'lastLogIn', 'ddate']) {
    if (profile[key] !== undefined) body[key] = profile[key];
  }
  return body;
}

describe('the Python client, editing a profile', () => {
  it('posts back the profile it read, with changes, and reads the updated profile from the answer', async () => {
    const user = await createActiveUser(server, { fullname: 'Melisa Bok' });
    const client = await signedIn(user.email);
    const read = (await client.send('GET', '/profiles')).json.profiles[0];
    // A profile read back with a date of birth already given carries dobTimestamp.
    const first = await client.send('POST', '/profiles', { json: toJson({ ...read, content: { ...read.content, yearOfBirth: 1990 } }) });
    expect(first.status).toBe(200);
    expect(first.json.dobTimestamp).toEqual(expect.any(Number));
    const profile = first.json;
    profile.content.homepage = 'https://melisa.example.org';
    profile.content.names.push({ fullname: 'Melisa Bok Tejada' });
    profile.content.history = [{ position: 'PhD Student', start: 2017, end: null, institution: { country: 'US', domain: 'example.org' } }];
    const res = await client.send('POST', '/profiles', { json: toJson(profile) });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      id: user.id,
      content: {
        homepage: 'https://melisa.example.org',
        names: [expect.objectContaining({ fullname: 'Melisa Bok', username: user.id, preferred: true }), { fullname: 'Melisa Bok Tejada', username: '~Melisa_Bok_Tejada1' }],
        history: [{ position: 'PhD Student', start: 2017, end: null, institution: { country: 'US', domain: 'example.org' } }],
        emails: [user.email],
        yearOfBirth: 1990,
      },
      dobTimestamp: first.json.dobTimestamp,
    });
    expect(res.json.tmdate).toBeGreaterThanOrEqual(first.json.tmdate);
    // The answer is the profile as `GET /profiles` shows it.
    expect((await client.send('GET', '/profiles')).json.profiles[0]).toEqual(res.json);
    // Posting it back unchanged changes nothing but tmdate.
    const again = await client.send('POST', '/profiles', { json: toJson(res.json) });
    expect({ ...again.json, tmdate: 0 }).toEqual({ ...res.json, tmdate: 0 });
  });

  it('changes the preferred address as the emails page does, for a client that signed in, and keeps a confirmed one left out of `emails`; one made with `token=` alone is refused', async () => {
    const user = await createActiveUser(server);
    const client = await signedIn(user.email);
    const second = `second-${user.email}`;
    // `confirm_alternate_email`, `activate_email_with_token` (client.py), with the mailed code.
    expect((await client.send('POST', '/user/confirm', { json: { alternate: second } })).status).toBe(200);
    const code = /code: (\d{6})/.exec((await lastMailTo(server.dataDir, second)).text)?.[1];
    expect((await client.send('PUT', '/activatelink', { json: { email: second, token: code } })).status).toBe(200);
    const read = (await client.send('GET', '/profiles')).json.profiles[0];
    expect(read.content).toMatchObject({ emails: [user.email, second], preferredEmail: user.email });

    const tokenOnly = new PythonClient(server.url);
    tokenOnly.token = client.token;
    const refused = await tokenOnly.send('POST', '/profiles', { json: toJson({ ...read, content: { ...read.content, preferredEmail: second } }) });
    expect(refused.status).toBe(403);
    expect(refused.json).toMatchObject({ name: 'ForbiddenError', details: { path: 'content/preferredEmail' } });

    const preferred = await client.send('POST', '/profiles', { json: toJson({ ...read, content: { ...read.content, preferredEmail: second } }) });
    expect(preferred.status, JSON.stringify(preferred.json)).toBe(200);
    expect(preferred.json.content).toMatchObject({ emails: [user.email, second], preferredEmail: second });
    // A confirmed address left out (a script's list, read before it was added) stays.
    const kept = await client.send('POST', '/profiles', { json: toJson({ ...preferred.json, content: { ...preferred.json.content, emails: [second] } }) });
    expect(kept.status, JSON.stringify(kept.json)).toBe(200);
    expect(kept.json.content).toMatchObject({ emails: [user.email, second], preferredEmail: second });
  });

  it('refuses a link of the wrong kind, naming the field, and an edit of someone else’s profile', async () => {
    const user = await createActiveUser(server);
    const other = await createActiveUser(server, { fullname: 'Other Person' });
    const client = await signedIn(user.email);
    const read = (await client.send('GET', '/profiles')).json.profiles[0];
    const bad = await client.send('POST', '/profiles', { json: toJson({ ...read, content: { ...read.content, gscholar: 'https://example.org/citations?user=x' } }) });
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ name: 'ValidationError', details: { path: 'content/gscholar', reqId: expect.any(String) } });
    const theirs = (await client.send('GET', '/profiles', { params: { id: other.id } })).json.profiles[0];
    const forbidden = await client.send('POST', '/profiles', { json: toJson({ ...theirs, content: { ...theirs.content, homepage: 'https://evil.example.org' } }) });
    expect(forbidden.status).toBe(403);
    expect(forbidden.json.name).toBe('ForbiddenError');
    const guest = await new PythonClient(server.url).send('POST', '/profiles', { json: toJson(read) });
    expect(guest.status).toBe(401);
    const missing = await client.send('POST', '/profiles', { json: { content: read.content } });
    expect(missing.json).toMatchObject({ name: 'MissingRequiredError', details: { path: 'signatures' } });
  });
});
