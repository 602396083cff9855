/**
 * Found by an independent review of the pages. Each provider page (login, consent, sign-out)
 * set a new browser secret in the CSRF cookie as it was shown, so opening a second one in the
 * same browser voided the form of the first: signing in on the first tab after opening another
 * sign-in was refused as "The form has expired". The secret is now kept while the browser has
 * one; each form's token is still bound to its own interaction.
 */
import type * as client from 'openid-client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { authorizationRequest, REDIRECT, registerClient, relyingParty, UserAgent } from '../oidc/helpers.ts';

let server: TestServer;
let rp: client.Configuration;
beforeAll(async () => {
  server = await startServer();
  await registerClient(server, 'tabs');
  rp = await relyingParty(server, 'tabs');
});
afterAll(() => server.close());

it('a sign-in page stays good after another is opened in the same browser, and a token is bound to its own interaction', async () => {
  const person = await createActiveUser(server);
  const browser = new UserAgent();
  const first = await browser.go((await authorizationRequest(rp)).url.toString());
  const second = await browser.go((await authorizationRequest(rp)).url.toString());
  expect(first.html).toContain('action="/oidc/login"');
  expect(second.html).toContain('action="/oidc/login"');
  // The second tab's token does not answer the first tab's interaction.
  const firstInteraction = /name="interaction" value="([^"]+)"/.exec(first.html)?.[1] ?? '';
  const crossed = await browser.submit(second, { email: person.email, password: PASSWORD, interaction: firstInteraction });
  expect(crossed.location).toBeNull();
  const signedIn = await browser.submit(first, { email: person.email, password: PASSWORD });
  const done = signedIn.location ? signedIn : await browser.submit(signedIn, { decision: 'allow' });
  expect(done.location?.startsWith(REDIRECT), done.html.slice(0, 300)).toBe(true);
  expect(new URL(done.location ?? 'http://x').searchParams.get('code')).toBeTruthy();
});
