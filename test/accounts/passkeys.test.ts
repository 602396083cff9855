/**
 * Passkeys in a real browser: Debian's Chromium driven by playwright-core, with the DevTools
 * protocol's virtual authenticator standing in for a security key or a phone, against the real
 * server on `http://localhost` (browsers refuse WebAuthn on an IP address).
 */
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import type * as SimpleWebAuthnBrowser from '@simplewebauthn/browser';
import * as oidcClient from 'openid-client';
import type { AuthenticationResponseJSON, PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PasskeySummary } from '../../server/accounts/mfa/passkey-factor.ts';
import { PASSKEY_ERRORS } from '../../server/accounts/passkeys/ceremonies.ts';
import { createClient } from '../../client/index.ts';
import { launchBrowser } from '../helpers/browser.ts';
import { cookiesOf } from '../helpers/cookies.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { authorizationRequest, registerClient, relyingParty } from '../oidc/helpers.ts';
import { checkPage } from '../web/helpers.ts';

/** What `/webauthn/browser.js` defines in the page (the tests' type check has no DOM library). */
type PageGlobals = { SimpleWebAuthnBrowser: typeof SimpleWebAuthnBrowser };

let server: TestServer;
let browser: Browser;
/** The application signing people in through our provider, and its redirect URI. */
let app: Server;
let callback: string;
let rp: oidcClient.Configuration;

beforeAll(async () => {
  server = await startServer({}, undefined, { hostName: 'localhost' });
  browser = await launchBrowser();
  app = createServer((_req, res) => res.end('<!doctype html><title>Signed in</title><p>Back in the application.</p>'));
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
  callback = `http://127.0.0.1:${(app.address() as AddressInfo).port}/callback`;
  await registerClient(server, 'passkey-app', { name: 'Paper Finder', redirect: callback });
  rp = await relyingParty(server, 'passkey-app');
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => (app ? app.close(() => resolve()) : resolve()));
  await server?.close();
});

/** An authorization request with PKCE, state and nonce, to this file's client. */
const signInRequest = () => authorizationRequest(rp, { redirect_uri: callback });

interface Device {
  context: BrowserContext;
  page: Page;
  cdp: CDPSession;
  authenticatorId: string;
}

/** A browser profile with one virtual platform authenticator that keeps discoverable credentials and verifies its user (device-bound unless `backedUp`). */
async function device(opts: { backedUp?: boolean } = {}): Promise<Device> {
  const context = await browser.newContext();
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
      // A synced passkey (a phone's or a password manager's) is backup eligible and backed up.
      ...(opts.backedUp ? { defaultBackupEligibility: true, defaultBackupState: true } : {}),
    },
  });
  // A page of ours that loads the browser library (the Python client's passkey page).
  await page.goto(`${server.url}/mfa/webauthn-auth?pendingToken=unused&callbackPort=9`);
  await page.waitForFunction(() => Boolean((globalThis as unknown as PageGlobals).SimpleWebAuthnBrowser));
  return { context, page, cdp, authenticatorId };
}

/** Signs the device's browser in with the password (the session cookies go to its context). */
async function signInWithPassword(d: Device, email: string) {
  const res = await d.context.request.post(`${server.url}/login`, { data: { id: email, password: PASSWORD } });
  expect(res.status()).toBe(200);
  return (await res.json()) as { token?: string; mfaPending?: true; mfaPendingToken?: string; mfaMethods?: string[] };
}

/**
 * Makes a passkey for the signed-in person on the device through the setup routes, as the web
 * application does: `POST /mfa/setup/passkey/init`, the authenticator, `POST /mfa/setup/passkey/verify`.
 */
async function enrolSignedIn(d: Device, name: string) {
  const init = await d.context.request.post(`${server.url}/mfa/setup/passkey/init`);
  expect(init.status()).toBe(200);
  const options = (await init.json()) as PublicKeyCredentialCreationOptionsJSON;
  const response = await d.page.evaluate((optionsJSON: PublicKeyCredentialCreationOptionsJSON) => (globalThis as unknown as PageGlobals).SimpleWebAuthnBrowser.startRegistration({ optionsJSON }), options);
  const verified = await d.context.request.post(`${server.url}/mfa/setup/passkey/verify`, { data: { response, name } });
  return { status: verified.status(), body: (await verified.json()) as { passkey: PasskeySummary; recoveryCodes?: string[]; message?: string } };
}

/** A new person's first passkey, made on the device after signing in with the password. */
async function enrol(d: Device, person: { email: string }, name: string): Promise<PasskeySummary> {
  await signInWithPassword(d, person.email);
  const made = await enrolSignedIn(d, name);
  expect(made.status).toBe(200);
  return made.body.passkey;
}

/** The device's answer to request options. */
function assert(d: Device, optionsJSON: PublicKeyCredentialRequestOptionsJSON): Promise<AuthenticationResponseJSON> {
  return d.page.evaluate((o: PublicKeyCredentialRequestOptionsJSON) => (globalThis as unknown as PageGlobals).SimpleWebAuthnBrowser.startAuthentication({ optionsJSON: o }), optionsJSON);
}

/** `POST /login/passkey/options`, then the device's passkey for it, as the page's script does. */
async function passwordlessAssertion(d: Device) {
  const begun = await fetch(`${server.url}/login/passkey/options`, { method: 'POST' });
  expect(begun.status).toBe(200);
  const { challengeId, options } = (await begun.json()) as { challengeId: string; options: PublicKeyCredentialRequestOptionsJSON };
  return { challengeId, response: await assert(d, options) };
}

/** `POST /login` with the password of a person who has a passkey: the pending sign-in's token. */
async function passwordLogin(email: string): Promise<string> {
  const res = await fetch(`${server.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: email, password: PASSWORD }) });
  const body = (await res.json()) as { mfaPending?: boolean; mfaPendingToken?: string; mfaMethods?: string[] };
  expect(body).toMatchObject({ mfaPending: true, mfaMethods: ['passkey'] });
  return body.mfaPendingToken ?? '';
}

async function mfaPost<T = Record<string, unknown>>(path: string, body: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as T };
}

function signIn(body: unknown) {
  return fetch(`${server.url}/login/passkey`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

describe('passkeys in a real browser', () => {
  it('enrols a discoverable passkey, listed by its name, kept by the authenticator with a random user handle', async () => {
    const person = await createActiveUser(server);
    const d = await device();
    await signInWithPassword(d, person.email);
    const first = await enrolSignedIn(d, ' Laptop ');
    expect(first).toEqual({
      status: 200,
      body: { passkey: { credentialId: expect.any(String), name: 'Laptop', createdAt: expect.any(Number), lastUsedAt: null }, recoveryCodes: expect.any(Array) },
    });
    const made = first.body.passkey;
    expect(await server.service.services.passkeys.list(person.id)).toEqual([made]);
    expect(await server.service.services.passkeys.count(person.id)).toBe(1);
    const { credentials } = await d.cdp.send('WebAuthn.getCredentials', { authenticatorId: d.authenticatorId });
    expect(credentials).toHaveLength(1);
    expect(credentials[0]).toMatchObject({ isResidentCredential: true, rpId: 'localhost' });
    expect(Buffer.from(credentials[0]!.credentialId, 'base64').toString('base64url')).toBe(made.credentialId);
    // The handle says nothing about the person: it is not their id or email.
    const handle = Buffer.from(credentials[0]!.userHandle ?? '', 'base64').toString('utf8');
    expect(handle).not.toContain(person.id);
    expect(handle).not.toContain(person.email);

    // The same authenticator cannot be enrolled twice: the options exclude it.
    await expect(enrolSignedIn(d, 'Again')).rejects.toThrow(/InvalidStateError|excluded|previously registered/i);
    // The passkey is now a second factor of the person.
    expect((await d.context.request.get(`${server.url}/mfa/passkeys`).then((r) => r.json()))).toEqual({ passkeys: [made] });
    expect(await signInWithPassword(d, person.email)).toMatchObject({ mfaPending: true, mfaMethods: ['passkey'] });
    await d.context.close();
  });

  it('signs in through the API with a passkey and no password: the answer and cookies of POST /login', async () => {
    const person = await createActiveUser(server, { fullname: 'Ada Lovelace' });
    const d = await device();
    await enrol(d, person, 'Phone');
    const { challengeId, response } = await passwordlessAssertion(d);
    const res = await signIn({ challengeId, response });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { token: string; user: { id: string; profile: { id: string; fullname: string } } };
    expect(body).toMatchObject({ token: expect.any(String), user: { id: person.email, profile: { id: person.id, fullname: 'Ada Lovelace' } } });
    const cookies = Object.keys(cookiesOf(res));
    expect(cookies).toEqual(expect.arrayContaining(['service.accessToken', 'service.refreshToken']));
    // The token is a session like any other.
    const me = await fetch(`${server.url}/profiles`, { headers: { authorization: `Bearer ${body.token}` } });
    expect(((await me.json()) as { profiles: Array<{ id: string }> }).profiles[0]!.id).toBe(person.id);
    expect((await server.service.services.passkeys.list(person.id))[0]!.lastUsedAt).toEqual(expect.any(Number));
    await d.context.close();
  });

  it('signs in with a passkey through the typed client, which keeps the session', async () => {
    const person = await createActiveUser(server);
    const d = await device();
    await enrol(d, person, 'Key');
    const api = createClient({ baseUrl: server.url });
    const { challengeId, options } = await api.api.accounts.passkeyLoginOptions.mutate();
    const response = await assert(d, options as PublicKeyCredentialRequestOptionsJSON);
    const result = await api.loginWithPasskey({ challengeId, response });
    expect(result.user.profile.id).toBe(person.id);
    expect(api.token).toBe(result.token);
    expect((await api.api.accounts.profiles.query({})).profiles[0]?.id).toBe(person.id);
    await d.context.close();
  });

  it('signs in no more with a passkey its owner removed', async () => {
    const person = await createActiveUser(server);
    const d = await device();
    const made = await enrol(d, person, 'Old phone');
    const removed = await d.context.request.delete(`${server.url}/mfa/passkeys/${made.credentialId}`);
    expect(removed.status()).toBe(200);
    const refused = await signIn(await passwordlessAssertion(d));
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ name: 'ValidationError', message: PASSKEY_ERRORS.notRegistered });
    await d.context.close();
  });

  it('refuses a passwordless sign-in whose authenticator did not verify the person', async () => {
    const person = await createActiveUser(server);
    const d = await device();
    await enrol(d, person, 'Key');
    // Presence only (no PIN, no biometrics): the browser is told verification is not needed, as a
    // page that altered the options would.
    await d.cdp.send('WebAuthn.setUserVerified', { authenticatorId: d.authenticatorId, isUserVerified: false });
    const begun = (await (await fetch(`${server.url}/login/passkey/options`, { method: 'POST' })).json()) as { challengeId: string; options: PublicKeyCredentialRequestOptionsJSON };
    const response = await assert(d, { ...begun.options, userVerification: 'discouraged' });
    const refused = await signIn({ challengeId: begun.challengeId, response });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ name: 'ValidationError', message: PASSKEY_ERRORS.userVerification });
    await d.context.close();
  });

  it('refuses a replayed assertion, with the same challenge id or a fresh one', async () => {
    const person = await createActiveUser(server);
    const d = await device();
    await enrol(d, person, 'Key');
    const { challengeId, response } = await passwordlessAssertion(d);
    expect((await signIn({ challengeId, response })).status).toBe(200);

    const again = await signIn({ challengeId, response });
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ status: 400, name: 'ValidationError', message: PASSKEY_ERRORS.noChallenge });

    // Sent twice at once: the challenge is taken by one of them only.
    const raced = await passwordlessAssertion(d);
    const statuses = (await Promise.all([signIn(raced), signIn(raced)])).map((r) => r.status).sort();
    expect(statuses).toEqual([200, 400]);

    const fresh = (await (await fetch(`${server.url}/login/passkey/options`, { method: 'POST' })).json()) as { challengeId: string };
    const replayed = await signIn({ challengeId: fresh.challengeId, response });
    expect(replayed.status).toBe(400);
    expect(await replayed.json()).toMatchObject({ name: 'ValidationError', message: PASSKEY_ERRORS.invalid });
    await d.context.close();
  });

  it('refuses a passkey whose signature counter went backwards (a cloned authenticator)', async () => {
    const person = await createActiveUser(server);
    const d = await device();
    await enrol(d, person, 'Key');
    const first = await passwordlessAssertion(d);
    expect((await signIn(first)).status).toBe(200);
    // A copy of the authenticator as it was now; the original signs in once more.
    const { credentials } = await d.cdp.send('WebAuthn.getCredentials', { authenticatorId: d.authenticatorId });
    const copy = credentials[0]!;
    expect(copy.signCount).toBeGreaterThan(0);
    expect((await signIn(await passwordlessAssertion(d))).status).toBe(200);
    // The copy is used: its counter is behind the one the server saw last.
    await d.cdp.send('WebAuthn.removeCredential', { authenticatorId: d.authenticatorId, credentialId: copy.credentialId });
    await d.cdp.send('WebAuthn.addCredential', { authenticatorId: d.authenticatorId, credential: copy });
    const cloned = await signIn(await passwordlessAssertion(d));
    expect(cloned.status).toBe(400);
    expect(await cloned.json()).toMatchObject({ name: 'ValidationError', message: PASSKEY_ERRORS.counter });
    await d.context.close();
  });

  it('refuses for a pending sign-in an assertion made with another person’s passkey, and says why', async () => {
    const owner = await createActiveUser(server);
    const other = await createActiveUser(server);
    const ownerDevice = await device();
    const otherDevice = await device();
    await enrol(ownerDevice, owner, 'Owner key');
    await enrol(otherDevice, other, 'Other key');
    const pending = await passwordLogin(owner.email);
    const options = await mfaPost<PublicKeyCredentialRequestOptionsJSON>('/mfa/challenge', { mfaPendingToken: pending, method: 'passkey' });
    expect(options.status).toBe(200);
    expect(options.body).toMatchObject({ rpId: 'localhost', userVerification: 'preferred', allowCredentials: [{ type: 'public-key' }] });
    // The other person's device answers the owner's challenge with its own passkey.
    const code = await assert(otherDevice, { ...options.body, allowCredentials: [] });
    const verified = await mfaPost('/mfa/verify', { mfaPendingToken: pending, method: 'passkey', code });
    expect(verified).toMatchObject({ status: 400, body: { name: 'ValidationError', message: PASSKEY_ERRORS.notYours } });
    await ownerDevice.context.close();
    await otherDevice.context.close();
  });

  it('is a second factor after the password: /mfa/challenge, the authenticator, /mfa/verify answer as /login does', async () => {
    const person = await createActiveUser(server, { fullname: 'Katherine Johnson' });
    const d = await device();
    await enrol(d, person, 'Laptop');
    const pending = await passwordLogin(person.email);
    const options = await mfaPost<PublicKeyCredentialRequestOptionsJSON>('/mfa/challenge', { mfaPendingToken: pending, method: 'passkey' });
    const code = await assert(d, options.body);
    const verified = await mfaPost('/mfa/verify', { mfaPendingToken: pending, method: 'passkey', code, rememberDevice: false });
    expect(verified).toMatchObject({ status: 200, body: { token: expect.any(String), user: { id: person.email, profile: { id: person.id, fullname: 'Katherine Johnson' } } } });
    // The same assertion again, on a new pending sign-in, is refused.
    const again = await passwordLogin(person.email);
    await mfaPost('/mfa/challenge', { mfaPendingToken: again, method: 'passkey' });
    expect(await mfaPost('/mfa/verify', { mfaPendingToken: again, method: 'passkey', code })).toMatchObject({ status: 400, body: { name: 'ValidationError' } });
    await d.context.close();
  });

  it('takes the second step as the real web application sends it: WebAuthn by hand, binary fields in plain base64, no extension results', async () => {
    const person = await createActiveUser(server);
    const d = await device();
    await enrol(d, person, 'Laptop');
    const pending = await passwordLogin(person.email);
    const options = (await mfaPost<PublicKeyCredentialRequestOptionsJSON>('/mfa/challenge', { mfaPendingToken: pending, method: 'passkey' })).body;
    // openreview-web app/login/VerificationForm.js, PasskeyVerificationForm: atob/btoa, not
    // base64url. The challenge is read with atob as is; credential ids are the authenticator's
    // bytes, which may hold `-` or `_` in base64url, so they are read url-safe.
    const code = await d.page.evaluate(async (result: PublicKeyCredentialRequestOptionsJSON) => {
      type Bytes = { buffer: ArrayBuffer };
      const g = globalThis as unknown as {
        atob(text: string): string;
        btoa(text: string): string;
        navigator: { credentials: { get(o: unknown): Promise<{ id: string; rawId: ArrayBuffer; type: string; response: Record<string, ArrayBuffer> }> } };
      };
      const base64ToArrayBuffer = (text: string): ArrayBuffer => Uint8Array.from(g.atob(text), (c) => c.charCodeAt(0)).buffer;
      const arrayBufferToBase64 = (buffer: ArrayBuffer) => g.btoa(String.fromCharCode(...new Uint8Array(buffer)));
      const { allowCredentials, challenge, rpId, timeout, userVerification } = result;
      const credential = await g.navigator.credentials.get({
        publicKey: {
          challenge: base64ToArrayBuffer(challenge),
          timeout,
          rpId,
          allowCredentials: (allowCredentials ?? []).map((cred) => ({ id: (new Uint8Array(base64ToArrayBuffer(cred.id.replace(/-/g, '+').replace(/_/g, '/'))) as unknown as Bytes).buffer, type: cred.type, transports: cred.transports })),
          userVerification,
        },
      });
      const { authenticatorData, clientDataJSON, signature } = credential.response as { authenticatorData: ArrayBuffer; clientDataJSON: ArrayBuffer; signature: ArrayBuffer };
      return {
        id: credential.id,
        rawId: arrayBufferToBase64(credential.rawId),
        response: { clientDataJSON: arrayBufferToBase64(clientDataJSON), authenticatorData: arrayBufferToBase64(authenticatorData), signature: arrayBufferToBase64(signature) },
        type: credential.type,
      };
    }, options);
    const verified = await mfaPost('/mfa/verify', { mfaPendingToken: pending, method: 'passkey', code, rememberDevice: false });
    expect(verified).toMatchObject({ status: 200, body: { user: { profile: { id: person.id } } } });
    await d.context.close();
  });

  it('answers every malformed or unknown passwordless sign-in with the Error body', async () => {
    const missing = await signIn({ response: {} });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ status: 400, name: expect.stringMatching(/Error$/) });
    const unknown = await signIn({
      challengeId: 'never-made',
      response: { id: 'AAAA', rawId: 'AAAA', type: 'public-key', response: { clientDataJSON: 'e30', authenticatorData: 'AAAA', signature: 'AAAA' } },
    });
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toMatchObject({ name: 'ValidationError', message: PASSKEY_ERRORS.noChallenge });
  });
});

describe('passkeys on our pages', () => {
  it('signs in to an application on the provider’s login page with a passkey and no password', async () => {
    const person = await createActiveUser(server, { fullname: 'Grace Murray' });
    const d = await device();
    await enrol(d, person, 'Laptop');
    // Signed out: the provider shows its login page.
    await d.context.clearCookies();
    const request = await signInRequest();
    await d.page.goto(request.url.toString());
    await expect.poll(() => d.page.title()).toBe('Sign in');
    await d.page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await d.page.getByRole('button', { name: 'Allow' }).click();
    await d.page.waitForURL((url) => url.toString().startsWith(callback));
    const tokens = await oidcClient.authorizationCodeGrant(rp, new URL(d.page.url()), {
      pkceCodeVerifier: request.verifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
      idTokenExpected: true,
    });
    // A device-bound passkey that verified its holder: `hwk` and `mfa` (RFC 8176), two factors.
    expect(tokens.claims()).toMatchObject({ sub: person.id, name: 'Grace Murray', email: person.email, amr: ['hwk', 'mfa'], acr: '2' });
    await d.context.close();
  });

  it('is the second step after the password on the provider’s login page: amr pwd, hwk and mfa', async () => {
    const person = await createActiveUser(server);
    const d = await device();
    await enrol(d, person, 'Laptop');
    await d.context.clearCookies();
    const request = await signInRequest();
    await d.page.goto(request.url.toString());
    await d.page.getByLabel('Email').fill(person.email);
    await d.page.getByLabel('Password').fill(PASSWORD);
    await d.page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect.poll(() => d.page.title()).toBe('Confirm it is you');
    await d.page.getByRole('button', { name: 'Use your passkey' }).click();
    await d.page.getByRole('button', { name: 'Allow' }).click();
    await d.page.waitForURL((url) => url.toString().startsWith(callback));
    const tokens = await oidcClient.authorizationCodeGrant(rp, new URL(d.page.url()), {
      pkceCodeVerifier: request.verifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
      idTokenExpected: true,
    });
    expect(tokens.claims()).toMatchObject({ sub: person.id, amr: ['pwd', 'hwk', 'mfa'], acr: '2' });
    await d.context.close();
  });

  it('says `swk` in the ID token for a synced (backed-up) passkey', async () => {
    const person = await createActiveUser(server);
    const d = await device({ backedUp: true });
    await enrol(d, person, 'Synced');
    await d.context.clearCookies();
    const request = await signInRequest();
    await d.page.goto(request.url.toString());
    await d.page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await d.page.getByRole('button', { name: 'Allow' }).click();
    await d.page.waitForURL((url) => url.toString().startsWith(callback));
    const tokens = await oidcClient.authorizationCodeGrant(rp, new URL(d.page.url()), {
      pkceCodeVerifier: request.verifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
      idTokenExpected: true,
    });
    expect(tokens.claims()).toMatchObject({ sub: person.id, amr: ['swk', 'mfa'], acr: '2' });
    await d.context.close();
  });

  it('says so on the login page when the browser has no passkey for the site, and the password form stays', async () => {
    // The authenticator has no passkey for this site: the browser finds none, the page says so.
    const d = await device();
    const request = await signInRequest();
    await d.page.goto(request.url.toString());
    await d.page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await expect.poll(() => d.page.getByRole('alert').textContent(), { timeout: 20_000 }).toBe('The passkey request was cancelled or timed out. Try again.');
    expect(await d.page.getByLabel('Password').isVisible()).toBe(true);
    await d.context.close();
  });

  it('keeps the passkey button out of a login page without JavaScript', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    await page.goto((await signInRequest()).url.toString());
    await expect.poll(() => page.title()).toBe('Sign in');
    expect(await page.getByRole('button', { name: 'Sign in with a passkey' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Sign in', exact: true }).count()).toBe(1);
    await context.close();
  });

  it('runs the Python client’s passkey step and posts token and user to its listener on 127.0.0.1', async () => {
    const person = await createActiveUser(server, { fullname: 'Alan Turing' });
    const d = await device();
    await enrol(d, person, 'Laptop');
    await d.context.clearCookies();
    // openreview/mfa.py's CallbackHandler: one POST, a form with `token` and `user` (JSON).
    let received: (form: URLSearchParams) => void = () => undefined;
    const posted = new Promise<URLSearchParams>((resolve) => (received = resolve));
    const listener = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        res.setHeader('Content-Type', 'text/html');
        res.end('<!doctype html><title>Authentication Complete</title><p>You may close this tab.</p>');
        received(new URLSearchParams(body));
      });
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const port = (listener.address() as AddressInfo).port;
    const pending = await passwordLogin(person.email);
    await d.page.goto(`${server.url}/mfa/webauthn-auth?pendingToken=${encodeURIComponent(pending)}&callbackPort=${port}`);
    await d.page.getByRole('button', { name: 'Use my passkey' }).click();
    const form = await posted;
    await d.page.waitForURL(`http://127.0.0.1:${port}/`);
    const user = JSON.parse(form.get('user') ?? 'null') as { id: string; profile: { id: string; fullname: string } };
    expect(user).toMatchObject({ id: person.email, profile: { id: person.id, fullname: 'Alan Turing' } });
    // The token is a session of the person, as the client's __handle_token then uses it.
    const me = await fetch(`${server.url}/profiles`, { headers: { authorization: `Bearer ${form.get('token') ?? ''}` } });
    expect(((await me.json()) as { profiles: Array<{ id: string }> }).profiles[0]!.id).toBe(person.id);
    await new Promise<void>((resolve) => listener.close(() => resolve()));
    await d.context.close();
  });

  it('shows on the Python client’s page why the step failed (a used sign-in), and posts nothing', async () => {
    const d = await device();
    await d.page.goto(`${server.url}/mfa/webauthn-auth?pendingToken=not-a-pending-sign-in&callbackPort=9`);
    await d.page.getByRole('button', { name: 'Use my passkey' }).click();
    await expect.poll(() => d.page.getByRole('alert').textContent()).toMatch(/sign-in has expired|log in again/i);
    expect(new URL(d.page.url()).pathname).toBe('/mfa/webauthn-auth');
    await d.context.close();
  });

  it('has pages with no accessibility violations axe-core finds (the login page with its passkey button, the Python client’s page)', async () => {
    // axe is injected into the page, which our CSP would refuse: this browser ignores it.
    const context = await browser.newContext({ bypassCSP: true });
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    await cdp.send('WebAuthn.addVirtualAuthenticator', { options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true } });
    const axePath = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
    const violationsOf = async (url: string) => {
      await page.goto(url);
      await page.waitForFunction(() => Boolean((globalThis as unknown as PageGlobals).SimpleWebAuthnBrowser));
      await page.addScriptTag({ path: axePath });
      return page.evaluate(async () => {
        const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: Array<{ id: string; nodes: unknown[] }> }> } }).axe;
        return (await axe.run()).violations.map((v) => v.id);
      });
    };
    await page.goto((await signInRequest()).url.toString());
    expect(await page.getByRole('button', { name: 'Sign in with a passkey' }).isVisible()).toBe(true);
    expect(await violationsOf(page.url())).toEqual([]);
    expect(await violationsOf(`${server.url}/mfa/webauthn-auth?pendingToken=abc&callbackPort=8765`)).toEqual([]);
    // And against WCAG 2.1 A and AA, as every page: its screenshot goes to docs/screenshots.
    await checkPage(page, 'passkey-python-client');
    await context.close();
  });

  it('serves the browser library from the package, and the Python client’s page with a CSP that lets forms go only to its listener', async () => {
    const library = await fetch(`${server.url}/webauthn/browser.js`);
    expect(library.status).toBe(200);
    expect(library.headers.get('content-type')).toMatch(/javascript/);
    expect(await library.text()).toContain('SimpleWebAuthnBrowser');
    const page = await fetch(`${server.url}/mfa/webauthn-auth?pendingToken=abc&callbackPort=8765`);
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain('form-action http://127.0.0.1:8765/');
    expect(csp).not.toContain('unsafe-inline');
    const bad = await fetch(`${server.url}/mfa/webauthn-auth?pendingToken=abc&callbackPort=99999`);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ status: 400, name: 'ValidationError' });
  });
});
