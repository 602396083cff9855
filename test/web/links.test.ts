/**
 * Where the mailed links and the sign-in provider send a person: to these pages when `WEB_URL`
 * is left unset (`${BASE_URL}/account`), to a separate frontend when it names one, with the
 * paths the real platform's web client serves.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.ts';
import { Client } from '../helpers/http.ts';
import { lastMailTo } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';
import { authorizationRequest, registerClient, relyingParty } from '../oidc/helpers.ts';

/** Follows every mailed link in Chromium. */
const LONG = { timeout: 60_000 };

describe('WEB_URL', () => {
  it('defaults to the pages under BASE_URL, while the provider keeps its own sign-in pages', () => {
    expect(loadConfig({ BASE_URL: 'https://review.example.org' })).toMatchObject({ webUrl: 'https://review.example.org/account', signInPagesUrl: 'https://review.example.org' });
    expect(loadConfig({ BASE_URL: 'https://review.example.org', WEB_URL: 'https://web.example.org/' })).toMatchObject({
      webUrl: 'https://web.example.org',
      signInPagesUrl: 'https://web.example.org',
      pagesUrl: 'https://review.example.org/account',
    });
  });

  describe('left unset', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startServer();
    });
    afterAll(async () => server.close());

    it('mails links to these pages, and the provider’s "Forgot your password?" leads to them', LONG, async () => {
      await new Client(server.url).post('/register', { email: 'new@example.org', password: 'Correct-Horse-9', fullname: 'New Person', token: 'dev-ok' });
      expect((await lastMailTo(server.dataDir, 'new@example.org')).text).toContain(`${server.url}/account/profile/activate?token=`);
      const user = await createActiveUser(server);
      await new Client(server.url).post('/resettable', { id: user.email, token: 'dev-ok' });
      expect((await lastMailTo(server.dataDir, user.email)).text).toContain(`${server.url}/account/user/password?token=`);

      await registerClient(server, 'links-app');
      const { url } = await authorizationRequest(await relyingParty(server, 'links-app'));
      const res = await fetch(url, { redirect: 'manual' });
      const login = new URL(res.headers.get('location') ?? '', server.url);
      expect(`${login.origin}${login.pathname}`).toBe(`${server.url}/oidc/login`);
      const html = await (await fetch(login)).text();
      expect(html).toContain(`href="${server.url}/account/reset"`);
      // The service's own address leads to the pages.
      const root = await fetch(`${server.url}/`, { redirect: 'manual' });
      expect(root.status).toBe(303);
      expect(root.headers.get('location')).toBe(`${server.url}/account`);
    });
  });

  describe('naming a separate frontend', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startServer({ WEB_URL: 'https://web.example.org' });
    });
    afterAll(async () => server.close());

    it('mails the real web client’s paths on it, and the provider sends sign-ins there', async () => {
      await new Client(server.url).post('/register', { email: 'new@example.org', password: 'Correct-Horse-9', fullname: 'New Person', token: 'dev-ok' });
      expect((await lastMailTo(server.dataDir, 'new@example.org')).text).toContain('https://web.example.org/profile/activate?token=');
      await registerClient(server, 'links-app');
      const { url } = await authorizationRequest(await relyingParty(server, 'links-app'));
      const res = await fetch(url, { redirect: 'manual' });
      // The web client's one page for both steps (`app/oidc/authorize/page.js`).
      expect(res.headers.get('location')).toMatch(/^https:\/\/web\.example\.org\/oidc\/authorize\?interaction=/);
      // A fresh sign-in or a second factor is asked on this service's login page, the only one
      // that asks for them: the web client's would sign the person in, then send them here again.
      for (const asked of [{ prompt: 'login' }, { max_age: '0' }, { acr_values: '2' }] as Array<Record<string, string>>) {
        const fresh = await fetch((await authorizationRequest(await relyingParty(server, 'links-app'), asked)).url, { redirect: 'manual' });
        expect(fresh.headers.get('location'), JSON.stringify(asked)).toMatch(new RegExp(`^${server.url}/oidc/login\\?interaction=`));
      }
    });

    it('warns at start that its server will not see the session without COOKIE_DOMAIN', () => {
      expect(server.logs.some((line) => line.includes('WEB_URL is on another host and COOKIE_DOMAIN is unset'))).toBe(true);
    });

    it('links an added address\'s confirmation, which the web client has no page for, to this service\'s own page', async () => {
      const person = await createActiveUser(server);
      const { client } = await loggedIn(server, person.email);
      expect((await client.post('/user/confirm', { alternate: 'added-elsewhere@example.org' })).status).toBe(200);
      expect((await lastMailTo(server.dataDir, 'added-elsewhere@example.org')).text).toContain(`${server.url}/account/confirm?token=`);
    });
  });
});
