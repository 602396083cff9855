/**
 * The failure (issue 24, defect 5): a used activation link, opened by the person it activated
 * (active, and signed in by that activation), offered "Send me a new link" for an account that had
 * nothing left to activate. Now it says the account is already active and leads to the account.
 * A guest opening it still gets the one-click renewal, since the page cannot tell whose it was.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { HISTORY, registerAndGetToken } from '../helpers/users.ts';
import { mailSettled } from '../../server/mail/mailer.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

describe('a used activation link', () => {
  it('tells the signed-in person their account is already active, with no new link to send', async () => {
    const { token } = await registerAndGetToken(server, { email: 'used-link@example.org' });
    const person = new Client(server.url);
    expect((await person.request('PUT', `/activate/${token}`, { content: { history: HISTORY } })).status).toBe(200);
    const page = await person.get(`/account/profile/activate?token=${token}`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('Your account is already active');
    expect(page.body).not.toContain('Send me a new link');
    expect(page.body).toContain('/account/security');

    const guest = await new Client(server.url).get(`/account/profile/activate?token=${token}`);
    expect(guest.status).toBe(400);
    expect(guest.body).toContain('Send me a new link');
  });

  it('of someone else, opened by a signed-in person, is not called theirs: the new link is offered', async () => {
    const mine = await registerAndGetToken(server, { email: 'mine@example.org' });
    const person = new Client(server.url);
    expect((await person.request('PUT', `/activate/${mine.token}`, { content: { history: HISTORY } })).status).toBe(200);
    // Another sign-up's link, made stale by a newer one, opened by the signed-in person above.
    const theirs = await registerAndGetToken(server, { email: 'theirs@example.org' });
    await new Client(server.url).post('/activatable', { id: 'theirs@example.org' });
    // The newer link is made with its mail, after the answer (`mail/outbox.ts`).
    await mailSettled(server.dataDir);
    const page = await person.get(`/account/profile/activate?token=${theirs.token}`);
    expect(page.status).toBe(400);
    expect(page.body).toContain('This link no longer works');
    expect(page.body).not.toContain('Your account is already active');
  });

  it('longer than any of ours, opened by a signed-in person, is the ordinary old-link page, not an error', async () => {
    const mine = await registerAndGetToken(server, { email: 'long@example.org' });
    const person = new Client(server.url);
    expect((await person.request('PUT', `/activate/${mine.token}`, { content: { history: HISTORY } })).status).toBe(200);
    const page = await person.get(`/account/profile/activate?token=${'x'.repeat(300)}`);
    expect(page.status).toBe(400);
    expect(page.body).toContain('This link no longer works');
  });
});
