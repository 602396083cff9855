/**
 * Found by an attack review: pre-registration takeover. Someone signed up with another person's
 * address and a password of their own; when the owner of the address signed up later, the answer
 * looked like a success but nothing changed, so the owner asked for the activation mail again,
 * activated, and the first password (the attacker's) signed in to the owner's account. A sign-up
 * for an address whose registration still waits for activation now replaces it: the latest
 * sign-up's password and name, the old activation links void, a new activation mail.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { lastMailTo, readOutbox } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { HISTORY } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

const ATTACKERS = 'Chosen-By-Mallory7';
const VICTIMS = 'Chosen-By-Victor8';

const register = (email: string, fullname: string, password: string) =>
  new Client(server.url).post('/register', { email, fullname, password, token: 'dev-ok' });
const login = (id: string, password: string) => new Client(server.url).post('/login', { id, password });

/** The activation link's token of the newest mail to `email`. */
async function activationToken(email: string): Promise<string> {
  const mail = await lastMailTo(server.dataDir, email);
  expect(mail.subject).toBe('Signup confirmation');
  const token = /\/profile\/activate\?token=([\w-]+)/.exec(mail.text)?.[1];
  if (!token) throw new Error(`no activation link in: ${mail.text}`);
  return token;
}

const WRONG_PASSWORD = { status: 400, name: 'BadRequestError', message: 'Invalid username or password', details: { reqId: expect.any(String) } };

describe('a sign-up for an address whose registration waits for activation', () => {
  it('replaces it: the owner who signs up later activates with their own password, and the first one signs nobody in', async () => {
    const email = 'victor@example.org';
    const first = await register(email, 'Mallory Early', ATTACKERS);
    expect(first.body).toEqual({ id: '~Mallory_Early1', status: 'ok' });
    const firstLink = await activationToken(email);

    // The same answer as a first sign-up's: the next tilde number of the name given.
    const second = await register(email, 'Victor Owner', VICTIMS);
    expect(second.body).toEqual({ id: '~Victor_Owner1', status: 'ok' });
    expect((await new Client(server.url).get('/tildeusername?first=Victor&last=Owner')).body.username).toBe('~Victor_Owner2');
    const mails = (await readOutbox(server.dataDir)).filter((m) => m.to === email);
    expect(mails.map((m) => m.subject)).toEqual(['Signup confirmation', 'Signup confirmation']);
    expect(mails[1]?.text).toContain('If you did not sign up, do not activate');
    const link = await activationToken(email);
    expect(link).not.toBe(firstLink);

    // The first sign-up's link was voided by the second.
    const old = await new Client(server.url).request('PUT', `/activate/${firstLink}`, { content: { history: HISTORY } });
    expect(old.body).toEqual({ status: 400, name: 'ValidationError', message: 'Activation token is not valid', details: { path: 'token', reqId: expect.any(String) } });

    const page = await new Client(server.url).get(`/activatable/${link}`);
    expect(page.body.profile.content.names).toEqual([expect.objectContaining({ fullname: 'Victor Owner', username: '~Victor_Owner1', preferred: true })]);
    const activated = await new Client(server.url).request('PUT', `/activate/${link}`, { content: { history: HISTORY } });
    expect(activated.status).toBe(200);

    const wrong = await login(email, 'Not-Anyones-Pass9');
    expect(wrong.body).toEqual(WRONG_PASSWORD);
    expect((await login(email, ATTACKERS)).body).toEqual(WRONG_PASSWORD);
    expect((await login(email, VICTIMS)).status).toBe(200);
    expect((await login('~Victor_Owner1', VICTIMS)).status).toBe(200);
  });

  it('a sign-up for an activated address changes nothing, as before', async () => {
    const email = 'settled@example.org';
    expect((await register(email, 'Settled Owner', VICTIMS)).status).toBe(200);
    expect((await new Client(server.url).request('PUT', `/activate/${await activationToken(email)}`, { content: { history: HISTORY } })).status).toBe(200);
    const db = server.service.db;
    const profileId = (await db('profile_emails').where({ email }).first()).profile_id;
    const snapshot = async () => ({
      profile: await db('profiles').where({ id: profileId }).first(),
      usernames: await db('profile_usernames').where({ profile_id: profileId }),
      tokens: await db('account_tokens').where({ profile_id: profileId }),
    });
    const before = await snapshot();

    const again = await register(email, 'Mallory Late', ATTACKERS);
    expect(again.body).toEqual({ id: '~Mallory_Late1', status: 'ok' });
    expect((await lastMailTo(server.dataDir, email)).subject).toBe('Sign-up attempt with your email address');
    expect(await snapshot()).toEqual(before);
    expect((await login(email, ATTACKERS)).body).toEqual(WRONG_PASSWORD);
    expect((await login(email, VICTIMS)).status).toBe(200);
  });

  it('the owner of a pending address may also set the password with a reset, then activate', async () => {
    const email = 'resetter@example.org';
    expect((await register(email, 'Mallory Resets', ATTACKERS)).status).toBe(200);
    expect((await new Client(server.url).post('/resettable', { id: email, token: 'dev-ok' })).status).toBe(200);
    const mail = await lastMailTo(server.dataDir, email);
    expect(mail.subject).toBe('Password reset');
    const resetToken = /\/user\/password\?token=([\w-]+)/.exec(mail.text)?.[1];
    expect((await new Client(server.url).request('PUT', `/reset/${resetToken}`, { password: VICTIMS })).status).toBe(200);

    expect((await new Client(server.url).post('/activatable', { id: email })).status).toBe(200);
    expect((await new Client(server.url).request('PUT', `/activate/${await activationToken(email)}`, { content: { history: HISTORY } })).status).toBe(200);
    expect((await login(email, ATTACKERS)).body).toEqual(WRONG_PASSWORD);
    expect((await login(email, VICTIMS)).status).toBe(200);
  });
});
