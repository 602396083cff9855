/**
 * Issue 12, defect 11. The attack: the login lockout (ten wrong passwords per account) counted
 * under the id exactly as typed, while the lookup trimmed and lower-cased it; so the same
 * email with a space, a tab, a no-break space, a byte-order mark or a zero-width space around
 * it, or in other letter case, was a fresh counter for the same account: unlimited guesses.
 * Now the id is made canonical once, before limiting and lookup, and an account's counter is
 * its profile's, whichever of its emails or usernames is typed. The same for the forms that
 * mail an account (`POST /resettable`, `POST /activatable`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { readOutbox } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD, registerAndGetToken } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

const spellings = (email: string) => [
  ` ${email}`,
  `${email}\t`,
  `\u00a0${email}`,
  `\ufeff${email}`,
  `${email}\u200b`,
  email.toUpperCase(),
  `\u2003${email}\u3000`,
  `\u200d${email}\u2060`,
  `\n${email} `,
  email,
];

describe('the login lockout', () => {
  it('counts every spelling of an email as the same account', async () => {
    const user = await createActiveUser(server);
    const http = new Client(server.url);
    for (const [i, id] of spellings(user.email).entries()) {
      const res = await http.post('/login', { id, password: `Wrong-Password-${i}` });
      expect(res.status, JSON.stringify(id)).toBe(400);
    }
    for (const id of [user.email, `\u00a0${user.email}`, `${user.email.toUpperCase()}\ufeff`, user.id]) {
      const locked = await http.post('/login', { id, password: PASSWORD });
      expect(locked.status, JSON.stringify(id)).toBe(429);
      expect(locked.body).toMatchObject({ status: 429, name: 'TooManyError' });
    }
  });

  it('counts the tilde id and the email of one profile together', async () => {
    const user = await createActiveUser(server);
    const http = new Client(server.url);
    for (let i = 0; i < 5; i += 1) expect((await http.post('/login', { id: user.id, password: `Wrong-${i}-Aa` })).status).toBe(400);
    for (let i = 0; i < 5; i += 1) expect((await http.post('/login', { id: ` ${user.id}\u200b`, password: `Wrong-${i}-Bb` })).status).toBe(400);
    expect((await http.post('/login', { id: user.email, password: PASSWORD })).status).toBe(429);
  });

  it('a spelling with white space around it signs in as the plain email', async () => {
    const user = await createActiveUser(server);
    const res = await new Client(server.url).post('/login', { id: `\ufeff ${user.email.toUpperCase()}\u00a0`, password: PASSWORD });
    expect(res.status).toBe(200);
    expect(res.body.user.id).toBe(user.email);
  });
});

describe('the forms that mail an account', () => {
  it('POST /resettable counts every spelling as the same account', async () => {
    const user = await createActiveUser(server);
    const http = new Client(server.url);
    for (const id of spellings(user.email).slice(0, 5)) {
      expect((await http.post('/resettable', { id, token: 'dev-ok' })).status, JSON.stringify(id)).toBe(200);
    }
    const res = await http.post('/resettable', { id: `\u00a0${user.email}`, token: 'dev-ok' });
    expect(res.status).toBe(429);
    expect(res.body).toMatchObject({ status: 429, name: 'TooManyError' });
    const mails = (await readOutbox(server.dataDir)).filter((m) => m.to === user.email && m.subject === 'Password reset');
    expect(mails).toHaveLength(5);
  });

  it('POST /activatable counts every spelling as the same account, and mails the canonical address', async () => {
    const email = 'resend-spellings@example.org';
    await registerAndGetToken(server, { email, fullname: 'Resend Spellings' });
    const http = new Client(server.url);
    for (const id of spellings(email).slice(0, 5)) {
      expect((await http.post('/activatable', { id })).status, JSON.stringify(id)).toBe(200);
    }
    expect((await http.post('/activatable', { id: `${email}\u200b` })).status).toBe(429);
    const mails = (await readOutbox(server.dataDir)).filter((m) => m.subject === 'Signup confirmation');
    // The sign-up's own mail and five re-sends, every one to the plain address.
    expect(mails.filter((m) => m.to === email)).toHaveLength(6);
  });
});
