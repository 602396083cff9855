/**
 * A person's own emails (remove, make preferred, undo from the mailed link) and their data (the
 * export, deleting the account after its grace period): issue 27, against the real server with
 * a clock the tests move.
 */
import * as oidcClient from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { TestClock } from '../helpers/clock.ts';
import { lastMailTo, readOutbox } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { confirmAddress, createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';
import { venueConfig } from '../helpers/venue.ts';
import { approvedRegistrationToken, REDIRECT, registerByHttp, startLogoutReceiver, UserAgent, type LogoutReceiver } from '../oidc/helpers.ts';

const DAY = 24 * 60 * 60 * 1000;
const VENUE = 'Leaving.org/2027';
const SUBMISSION = `${VENUE}/-/Submission`;
const PDF = `/pdf/${'1'.repeat(40)}.pdf`;

let server: TestServer;
const clock = new TestClock();
let receiver: LogoutReceiver;

beforeAll(async () => {
  server = await startServer({}, undefined, { now: clock.now });
  receiver = await startLogoutReceiver();
});
afterAll(async () => {
  await server.close();
  await receiver?.close();
});

/** Calls a procedure over tRPC's HTTP binding with the client's cookies: the answer's data, or its error. */
async function call(client: Client, path: string, input?: unknown, method: 'query' | 'mutation' = 'mutation'): Promise<{ ok: boolean; data: any; error: any; status: number }> {
  const res =
    method === 'query'
      ? await client.get(`/trpc/${path}${input === undefined ? '' : `?input=${encodeURIComponent(JSON.stringify(input))}`}`)
      : await client.post(`/trpc/${path}`, input ?? {});
  return { ok: res.status === 200, data: res.body?.result?.data, error: res.body?.error, status: res.status };
}

/** A person with a second confirmed address, signed in with their cookies. */
async function personWithTwoAddresses(): Promise<{ id: string; email: string; second: string; client: Client }> {
  const user = await createActiveUser(server);
  const { client } = await loggedIn(server, user.email);
  const second = `second-${user.email}`;
  await confirmAddress(server, client, second);
  return { ...user, second, client };
}

function undoToken(text: string): string {
  const token = /emails\/undo\?token=([\w-]+)/.exec(text)?.[1];
  if (!token) throw new Error(`no undo link in ${text}`);
  return token;
}

describe('emails', () => {
  it('adding an address tells the preferred one, with a link that removes the added address', async () => {
    const person = await personWithTwoAddresses();
    const mail = await lastMailTo(server.dataDir, person.email);
    expect(mail.subject).toBe('An email address was added to your account');
    expect(mail.text).toContain(person.second);
    const events = (await person.client.get('/security/events')).body.events.map((e: { action: string }) => e.action);
    expect(events).toContain('email:added');

    const undone = await call(new Client(server.url), 'accounts.undoEmailChange', { token: undoToken(mail.text) });
    expect(undone.data).toEqual({ change: 'added', email: person.second, sessionsEnded: true });
    const again = await loggedIn(server, person.email);
    expect((await call(again.client, 'accounts.ownEmails', undefined, 'query')).data.emails).toEqual([{ email: person.email, confirmed: true, preferred: true }]);
    expect((await new Client(server.url).post('/login', { id: person.second, password: PASSWORD })).status).toBe(400);
  });

  it('the last confirmed address cannot be removed, nor the preferred one', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    const last = await call(client, 'accounts.removeEmail', { email: user.email });
    expect(last.ok).toBe(false);
    expect(last.error.data?.httpStatus ?? last.status).toBe(400);
    const person = await personWithTwoAddresses();
    const preferred = await call(person.client, 'accounts.removeEmail', { email: person.email });
    expect(preferred.ok).toBe(false);
    expect((await call(person.client, 'accounts.ownEmails', undefined, 'query')).data.emails.map((e: { email: string }) => e.email).sort()).toEqual([person.email, person.second].sort());
  });

  it('the preferred address must be a confirmed one of the person’s', async () => {
    const person = await personWithTwoAddresses();
    expect((await person.client.post('/user/confirm', { alternate: `waiting-${person.email}` })).status).toBe(200);
    expect((await call(person.client, 'accounts.setPreferredEmail', { email: `waiting-${person.email}` })).ok).toBe(false);
    expect((await call(person.client, 'accounts.setPreferredEmail', { email: 'nobody@example.org' })).ok).toBe(false);
    const made = await call(person.client, 'accounts.setPreferredEmail', { email: person.second });
    expect(made.ok).toBe(true);
    expect(made.data.emails.find((e: { preferred: boolean }) => e.preferred).email).toBe(person.second);
    const told = await lastMailTo(server.dataDir, person.email);
    expect(told.subject).toBe('Your preferred email address was changed');
  });

  it('a change needs the signed-in session itself, not an access token alone', async () => {
    const person = await personWithTwoAddresses();
    const { token } = await loggedIn(server, person.email);
    const bearer = new Client(server.url);
    const res = await bearer.request('POST', '/trpc/accounts.removeEmail', { email: person.second }, { authorization: `Bearer ${token}` });
    expect(res.status).toBe(403);
  });

  it('the removed address gets a link that gives it back within seven days; opening the link changes nothing', async () => {
    const person = await personWithTwoAddresses();
    expect((await call(person.client, 'accounts.removeEmail', { email: person.second })).ok).toBe(true);
    const mail = await lastMailTo(server.dataDir, person.second);
    expect(mail.subject).toBe('This email address was removed from your account');
    const token = undoToken(mail.text);

    const page = await new Client(server.url).get(`/account/emails/undo?token=${token}`);
    expect(page.status).toBe(200);
    const preview = await call(new Client(server.url), 'accounts.emailUndo', { token }, 'query');
    expect(preview.data).toMatchObject({ live: true, change: 'removed', email: person.second });
    expect((await call(person.client, 'accounts.ownEmails', undefined, 'query')).data.emails.map((e: { email: string }) => e.email)).toEqual([person.email]);

    clock.advance(6 * DAY);
    const undone = await call(new Client(server.url), 'accounts.undoEmailChange', { token });
    expect(undone.data).toEqual({ change: 'removed', email: person.second, sessionsEnded: true });
    // Every session ended: the account may have been taken over.
    expect((await person.client.get('/profiles')).status).toBe(401);
    const again = await loggedIn(server, person.second);
    const emails = (await call(again.client, 'accounts.ownEmails', undefined, 'query')).data.emails;
    expect(emails).toContainEqual({ email: person.second, confirmed: true, preferred: false });
    expect((await call(new Client(server.url), 'accounts.undoEmailChange', { token })).ok).toBe(false);
    const events = (await again.client.get('/security/events')).body.events.map((e: { action: string }) => e.action);
    expect(events).toEqual(expect.arrayContaining(['email:removed', 'email:undone']));
  });

  it('an "added" link never takes away the last confirmed address: after a takeover, the links about the old address give it back first, in any order', async () => {
    // Someone in the account adds their own address, makes it preferred and removes the person's.
    const person = await personWithTwoAddresses();
    expect((await call(person.client, 'accounts.setPreferredEmail', { email: person.second })).ok).toBe(true);
    expect((await call(person.client, 'accounts.removeEmail', { email: person.email })).ok).toBe(true);
    const mails = (await readOutbox(server.dataDir)).filter((m) => m.to === person.email);
    const linkOf = (subject: string) => undoToken(mails.find((m) => m.subject === subject)?.text ?? '');
    const added = linkOf('An email address was added to your account');
    const removed = linkOf('This email address was removed from your account');
    const refused = await call(new Client(server.url), 'accounts.undoEmailChange', { token: added });
    expect(refused.ok).toBe(false);
    expect(refused.error.data.error).toMatchObject({ name: 'ValidationError', details: { path: 'token', reason: 'last-confirmed' } });
    expect((await server.service.services.db('profile_emails').where({ profile_id: person.id }).pluck('email'))).toEqual([person.second]);
    expect((await call(new Client(server.url), 'accounts.undoEmailChange', { token: removed })).ok).toBe(true);
    // The refused link was not used up: now it takes the added address away.
    expect((await call(new Client(server.url), 'accounts.undoEmailChange', { token: added })).ok).toBe(true);
    const rows = await server.service.services.db('profile_emails').where({ profile_id: person.id }).select('email', 'confirmed');
    expect(rows.map((r: { email: string }) => r.email)).toEqual([person.email]);
  });

  it('an undo link older than seven days undoes nothing', async () => {
    const person = await personWithTwoAddresses();
    await call(person.client, 'accounts.removeEmail', { email: person.second });
    const token = undoToken((await lastMailTo(server.dataDir, person.second)).text);
    clock.advance(7 * DAY + 60_000);
    expect((await call(new Client(server.url), 'accounts.emailUndo', { token }, 'query')).data).toEqual({ live: false });
    expect((await call(new Client(server.url), 'accounts.undoEmailChange', { token })).ok).toBe(false);
    // Nothing changed: the address is still removed, and the person can still sign in.
    const again = await loggedIn(server, person.email);
    expect((await call(again.client, 'accounts.ownEmails', undefined, 'query')).data.emails.map((e: { email: string }) => e.email)).toEqual([person.email]);
  });
});

describe('your data', () => {
  it('the export holds the person’s data and no secret or hash', async () => {
    const person = await personWithTwoAddresses();
    const res = await person.client.get('/user/export');
    expect(res.status).toBe(200);
    expect(res.body.profile.id).toBe(person.id);
    expect(res.body.emails.map((e: { email: string }) => e.email).sort()).toEqual([person.email, person.second].sort());
    expect(res.body.activity.map((e: { action: string }) => e.action)).toContain('sign-in');
    const text = JSON.stringify(res.body);
    const db = server.service.services.db;
    const profile = await db('profiles').where({ id: person.id }).first('password_hash');
    const secrets: string[] = [
      String(profile.password_hash),
      ...(await db('sessions').where({ profile_id: person.id }).pluck('refresh_hash')),
      ...(await db('account_tokens').where({ profile_id: person.id }).pluck('token_hash')),
      ...(await db('account_tokens').where({ profile_id: person.id }).whereNotNull('code_hash').pluck('code_hash')),
    ];
    expect(secrets.length).toBeGreaterThan(2);
    for (const secret of secrets) expect(text).not.toContain(secret);
    expect(text).not.toContain(PASSWORD);
    const download = await person.client.get('/account/data/export');
    expect(download.headers.get('content-disposition')).toMatch(/^attachment; filename="account-data-.*\.json"$/);
  });

  it('signing in within the grace period cancels the deletion', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    const asked = await call(client, 'accounts.requestDeletion', { password: PASSWORD });
    expect(asked.data.dueAt).toBeGreaterThan(clock.now() + 13 * DAY);
    expect((await lastMailTo(server.dataDir, user.email)).subject).toBe('Your account will be deleted');
    expect((await client.get('/profiles')).status).toBe(401);
    clock.advance(13 * DAY);
    const again = await loggedIn(server, user.email);
    expect((await call(again.client, 'accounts.deletionStatus', undefined, 'query')).data).toEqual({ dueAt: null, cancelledBySignIn: true });
    clock.advance(2 * DAY);
    await server.service.sweep();
    const later = await loggedIn(server, user.email);
    expect((await later.client.get('/profiles')).body.profiles[0].content.names[0].fullname).toBe('Grace Hopper');
    expect((await call(later.client, 'accounts.deletionStatus', undefined, 'query')).data).toEqual({ dueAt: null, cancelledBySignIn: false });
    const actions = (await later.client.get('/security/events')).body.events.map((e: { action: string }) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['account:deletion-requested', 'account:deletion-cancelled']));
  });

  it('a wrong password asks again and deletes nothing', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    expect((await call(client, 'accounts.requestDeletion', { password: 'not-the-password' })).ok).toBe(false);
    expect((await call(client, 'accounts.deletionStatus', undefined, 'query')).data.dueAt).toBeNull();
  });

  it('after the grace period the profile is anonymised: its notes keep their signature, it cannot sign in, its apps are told', async () => {
    const user = await createActiveUser(server, { fullname: 'Ada Lovelace' });
    const person = { ...user, password: PASSWORD };
    // An application the person signed in to, which hears of sign-outs by back-channel logout.
    const registered = await registerByHttp(server, await approvedRegistrationToken(server), { redirect_uris: [REDIRECT], backchannel_logout_uri: `${receiver.url}/logout`, backchannel_logout_session_required: true });
    const config = await oidcClient.discovery(new URL(server.url), registered.body.client_id, undefined, oidcClient.ClientSecretBasic(registered.body.client_secret ?? ''), { execute: [oidcClient.allowInsecureRequests] });
    const verifier = oidcClient.randomPKCECodeVerifier();
    const url = oidcClient.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid', code_challenge: await oidcClient.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    const agent = new UserAgent();
    const back = await agent.authorize(url, person);
    await oidcClient.authorizationCodeGrant(config, new URL(back.location ?? ''), { pkceCodeVerifier: verifier, idTokenExpected: true });
    // A submission the person signed, with a file they uploaded.
    const db = server.service.services.db;
    const admin = await createActiveUser(server, { role: 'superuser' });
    const root = (await loggedIn(server, admin.email)).client;
    expect((await root.post('/venues', venueConfig(VENUE))).status).toBe(200);
    await db('uploads').insert({ profile_id: user.id, invitation: SUBMISSION, field: 'pdf', url: PDF, size: 1000, sha1: '1'.repeat(40), created_at: clock.now() });
    const { client } = await loggedIn(server, user.email);
    const note = await client.post('/notes', { invitation: SUBMISSION, content: { title: { value: 'Engines' }, authors: { value: ['Ada Lovelace'] }, authorids: { value: [user.id] }, abstract: { value: 'Notes on engines.' }, pdf: { value: PDF } } });
    expect(note.status, JSON.stringify(note.body)).toBe(200);
    const exported = (await client.get('/user/export')).body;
    expect(exported.notes).toEqual({ signed: [note.body.id], authored: [note.body.id] });
    expect(exported.uploads).toEqual([{ url: PDF, invitation: SUBMISSION, field: 'pdf', size: 1000, createdAt: expect.any(Number) }]);
    expect(exported.applications.map((a: { clientId: string }) => a.clientId)).toEqual([registered.body.client_id]);
    await call(client, 'accounts.requestDeletion', { password: PASSWORD });

    clock.advance(15 * DAY);
    await server.service.sweep();

    const profile = await db('profiles').where({ id: user.id }).first();
    expect(profile.ddate).not.toBeNull();
    expect(profile.password_hash).toBeNull();
    expect(JSON.parse(profile.content)).toEqual({ names: [{ fullname: 'Deleted User', first: 'Deleted', middle: '', last: 'User', username: user.id, preferred: true }] });
    expect(await db('profile_emails').where({ profile_id: user.id })).toEqual([]);
    expect(await db('sessions').where({ profile_id: user.id }).whereNull('revoked_at')).toEqual([]);
    expect(await db('sessions').where({ profile_id: user.id }).whereNotNull('user_agent')).toEqual([]);
    expect(await db('oidc_consents').where({ profile_id: user.id })).toEqual([]);
    const audit = await db('audit_log').where({ target: user.id }).pluck('details');
    expect(audit.join(' ')).not.toMatch(/address|userAgent|@example/);
    expect((await db('audit_log').where({ target: user.id }).pluck('action'))).toEqual(expect.arrayContaining(['account:deletion-requested', 'account:deleted']));
    // The username stays taken: the next Ada Lovelace gets another number.
    expect(await db('profile_usernames').where({ profile_id: user.id }).pluck('username')).toContain(user.id);
    const signIn = await new Client(server.url).post('/login', { id: user.email, password: PASSWORD });
    expect(signIn.status).toBe(400);
    const byId = await new Client(server.url).post('/login', { id: user.id, password: PASSWORD });
    expect(byId.status).toBe(400);
    await expect.poll(() => receiver.received.get('/logout')?.length ?? 0, { timeout: 10_000 }).toBeGreaterThan(0);
    // The submission keeps its signature: the id, which now reads as a deleted profile.
    const moderator = (await loggedIn(server, admin.email)).client;
    const kept = (await moderator.get(`/notes?id=${note.body.id}`)).body.notes[0];
    expect(kept.signatures).toEqual([user.id]);
    expect(kept.content.title).toEqual({ value: 'Engines' });
    const tombstone = (await moderator.get(`/profiles?id=${encodeURIComponent(user.id)}`)).body.profiles[0];
    expect(tombstone.content.names).toEqual([{ fullname: 'Deleted User', first: 'Deleted', middle: '', last: 'User', username: user.id, preferred: true }]);
    expect(tombstone.content.emails).toEqual([]);
    // Nothing is left to restore: a moderator's "restore" is refused and changes nothing.
    const restore = await moderator.post('/profile/moderate', { id: user.id, decision: 'restore' });
    expect(restore.status).toBe(400);
    expect(restore.body).toMatchObject({ name: 'ValidationError', message: expect.stringContaining('anonymised') });
    expect((await db('profiles').where({ id: user.id }).first()).ddate).toBe(profile.ddate);
  });
});
