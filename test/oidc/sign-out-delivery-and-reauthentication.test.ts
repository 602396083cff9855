/**
 * Signing out and signing in again, where sign-out.test.ts and mfa.test.ts stop (issue 26):
 *
 * - back-channel logout delivery goes to exactly the registered `backchannel_logout_uri`: a
 *   receiver answering 302 (or 307) to another path of its own is not followed there, the
 *   delivery counts as failed and is retried to the registered URI once its backoff passed;
 * - a receiver that accepts the POST and never answers does not hold the person's sign-out
 *   (RP-initiated logout with `id_token_hint`, `POST /logout`): the answers come back while it
 *   holds; the delivery fails at the per-URI timeout and is retried;
 * - `prompt=login` with `max_age`, and `max_age` alone, without `acr_values`, for a person with
 *   no second factor: an older session signs in again on the login page, and the ID token's
 *   `auth_time` is that sign-in's, with `amr` ["pwd"] and `acr` "1";
 * - the RP-initiated logout question in Debian's Chromium: "Sign out" ends the session and lands
 *   on the registered `post_logout_redirect_uri` with `state`, or on "You are signed out".
 *
 * The real server (SQLite, HTTP on 127.0.0.1) runs on a `TestClock`: the back-channel backoff and
 * `max_age` are passed by moving that clock, not by sleeping. `openid-client` v6 is the relying party.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeJwt } from 'jose';
import * as client from 'openid-client';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.ts';
import { TestClock } from '../helpers/clock.ts';
import { cookieHeader } from '../helpers/cookies.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { approvedRegistrationToken, REDIRECT, registerByHttp, UserAgent } from './helpers.ts';

/**
 * Each test waits on something slow in normal work on a loaded 2-core machine: Chromium starting,
 * the back-channel rounds (once a second), and a held delivery reaching the server's 5 s
 * per-URI timeout.
 */
const LONG = 60_000;
const AFTER = `${REDIRECT}/signed-out`;

let server: TestServer;
const clock = new TestClock();
let person: { id: string; email: string; password: string };

/** The applications' back-channel logout endpoint: every request it got, in order, whatever its path or method. */
let receiver: Server;
let receiverUrl: string;
const arrivals: Array<{ method: string; path: string; token: string }> = [];
/** Paths whose next POST is held: accepted, read, and never answered. */
const holdNext = new Set<string>();
/** What happened, in order: the tests' sign-out answers and the receiver holding and being released. */
const events: string[] = [];

beforeAll(async () => {
  server = await startServer({}, undefined, { now: clock.now });
  person = { ...(await createActiveUser(server, { fullname: 'Returning Person' })), password: PASSWORD };
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const path = req.url ?? '';
      arrivals.push({ method: req.method ?? '', path, token: new URLSearchParams(body).get('logout_token') ?? '' });
      if (path === '/found') return void res.writeHead(302, { location: `${receiverUrl}/found-here-instead` }).end();
      // A 307 keeps the method: a client that followed it would POST the logout token there.
      if (path === '/temporary') return void res.writeHead(307, { location: `${receiverUrl}/temporary-here-instead` }).end();
      if (req.method === 'POST' && holdNext.delete(path)) {
        events.push(`held ${path}`);
        // Closed by the other side: the receiver never answers.
        res.on('close', () => events.push(`released ${path}`));
        return;
      }
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
}, LONG);
afterAll(async () => {
  await server?.close();
  receiver?.closeAllConnections();
  await new Promise((resolve) => (receiver ? receiver.close(resolve) : resolve(undefined)));
});

const insecure = { execute: [client.allowInsecureRequests] };

/** A confidential client registered over HTTP; `backchannel`: a path on the receiver. */
async function app(opts: { backchannel?: string; redirect?: string; postLogout?: string; name?: string } = {}) {
  const answer = await registerByHttp(server, await approvedRegistrationToken(server), {
    redirect_uris: [opts.redirect ?? REDIRECT],
    post_logout_redirect_uris: [opts.postLogout ?? AFTER],
    ...(opts.name ? { client_name: opts.name } : {}),
    ...(opts.backchannel ? { backchannel_logout_uri: `${receiverUrl}${opts.backchannel}`, backchannel_logout_session_required: true } : {}),
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  const config = await client.discovery(new URL(server.url), answer.body.client_id, undefined, client.ClientSecretBasic(answer.body.client_secret ?? ''), insecure);
  return { id: answer.body.client_id, config };
}

/** An authorization request with PKCE, state and nonce to `config` (`extra`: prompt, max_age …), and its checks. */
async function request(config: client.Configuration, extra: Record<string, string> = {}, redirect = REDIRECT) {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, { redirect_uri: redirect, scope: 'openid', state, nonce, code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', ...extra });
  const checks = { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true, ...(extra.max_age ? { maxAge: Number(extra.max_age) } : {}) };
  return { url, state, redeem: (callback: string) => client.authorizationCodeGrant(config, new URL(callback), checks) };
}

/** Signs the person in to `config` through `agent`'s browser session (login and consent pages as needed). */
async function signIn(config: client.Configuration, agent: UserAgent) {
  const asked = await request(config);
  const page = await agent.authorize(asked.url, person);
  expect(page.location, page.html.slice(0, 300)).toMatch(/^http:\/\/127\.0\.0\.1:9\/callback\?code=/);
  return asked.redeem(page.location ?? '');
}

/** `POST /logout` with `agent`'s session, as the service's own pages sign out. */
async function postLogout(agent: UserAgent) {
  return fetch(`${server.url}/logout`, { method: 'POST', headers: { cookie: cookieHeader(agent.jar), 'content-type': 'application/json' }, body: '{}' });
}

/** The logout tokens POSTed to `path` on the receiver, in order. */
const postsTo = (path: string) => arrivals.filter((a) => a.method === 'POST' && a.path === path).map((a) => a.token);

interface DeliveryRow {
  uri: string;
  logout_token: string;
  attempts: number;
  next_attempt_at: number | string;
  leased_until: number | string | null;
  delivered_at: number | string | null;
  given_up_at: number | string | null;
  last_error: string | null;
}
const deliveries = (clientId: string): Promise<DeliveryRow[]> => server.service.db('oidc_logout_deliveries').where({ client_id: clientId }).orderBy('id');

describe('back-channel logout delivery', () => {
  it('goes to exactly the registered backchannel_logout_uri, follows no redirect (302 or 307), and is retried there after the backoff', async () => {
    const agent = new UserAgent();
    const found = await app({ backchannel: '/found' });
    const temporary = await app({ backchannel: '/temporary' });
    await signIn(found.config, agent);
    await signIn(temporary.config, agent);
    expect((await postLogout(agent)).status).toBe(200);

    // The first attempt of each: the redirect is an answer other than 200, a failure.
    await expect.poll(async () => (await Promise.all([deliveries(found.id), deliveries(temporary.id)])).map((rows) => rows.map((r) => Number(r.attempts))), { timeout: 20_000 }).toEqual([[1], [1]]);
    for (const [{ id }, path, status] of [[found, '/found', 302], [temporary, '/temporary', 307]] as const) {
      const [row] = await deliveries(id);
      expect(row).toMatchObject({ uri: `${receiverUrl}${path}`, attempts: 1, last_error: `answered ${status}`, delivered_at: null, given_up_at: null, leased_until: null });
      // Not due again yet: the backoff (2 s after a first failure) runs on the server's clock.
      expect(Number(row?.next_attempt_at)).toBeGreaterThan(clock.now());
      expect(postsTo(path)).toHaveLength(1);
      expect(decodeJwt(postsTo(path)[0] ?? '').aud).toBe(id);
    }

    clock.advance(3_000);
    await expect.poll(() => [postsTo('/found').length, postsTo('/temporary').length], { timeout: 20_000 }).toSatisfy(([a, b]: number[]) => (a ?? 0) >= 2 && (b ?? 0) >= 2);
    // An attempt is counted once its answer came, just after the receiver saw it.
    await expect
      .poll(async () => (await Promise.all([deliveries(found.id), deliveries(temporary.id)])).map((rows) => Number(rows[0]?.attempts)), { timeout: 20_000 })
      .toSatisfy(([a, b]: number[]) => (a ?? 0) >= 2 && (b ?? 0) >= 2);
    for (const [{ id }, path] of [[found, '/found'], [temporary, '/temporary']] as const) {
      // The same delivery again (the same logout token), to the same registered URI.
      const [first, second] = postsTo(path);
      expect(second).toBe(first);
      const rows = await deliveries(id);
      expect(rows).toHaveLength(1);
      expect(Number(rows[0]?.attempts)).toBeGreaterThanOrEqual(2);
      expect(rows[0]?.delivered_at).toBeNull();
    }
    // Nothing, of any method, ever reached where the redirects pointed.
    expect(arrivals.filter((a) => a.path.includes('here-instead'))).toEqual([]);
  }, LONG);

  it('to a receiver that never answers does not hold the sign-out: the answers come first; it fails at the timeout and is retried', async () => {
    const held = await app({ backchannel: '/held' });
    const [a, b, c] = [new UserAgent(), new UserAgent(), new UserAgent()];
    const sidOf = async (agent: UserAgent) => (await signIn(held.config, agent)).claims()?.sid;
    const aSid = await sidOf(a);
    const bTokens = await signIn(held.config, b);
    const bSid = bTokens.claims()?.sid;
    const cSid = await sidOf(c);
    expect(new Set([aSid, bSid, cSid]).size).toBe(3);

    holdNext.add('/held');
    const outA = await postLogout(a);
    expect(outA.status).toBe(200);
    events.push('answer A (POST /logout)');
    // The round that found A's ended session is now waiting on the receiver.
    await expect.poll(() => events, { timeout: 20_000 }).toContain('held /held');
    const heldToken = postsTo('/held')[0] ?? '';
    expect(decodeJwt(heldToken).sid).toBe(aSid);

    // While it holds, two more sessions sign out, each way an application or the service does it.
    const end = client.buildEndSessionUrl(held.config, { id_token_hint: bTokens.id_token ?? '', post_logout_redirect_uri: AFTER, state: 'while-held' });
    const outB = await b.go(end.toString());
    expect(outB.location).toBe(`${AFTER}?state=while-held`);
    events.push('answer B (RP-initiated, id_token_hint)');
    const outC = await postLogout(c);
    expect(outC.status).toBe(200);
    events.push('answer C (POST /logout)');
    expect(events).toEqual(['answer A (POST /logout)', 'held /held', 'answer B (RP-initiated, id_token_hint)', 'answer C (POST /logout)']);

    // The server gives up on the held POST at its per-URI timeout: a failed attempt, to be retried.
    await expect.poll(() => events, { timeout: 20_000 }).toContain('released /held');
    expect(events.at(-1)).toBe('released /held');
    const rowOf = async (token: string) => (await deliveries(held.id)).find((r) => r.logout_token === token);
    await expect.poll(async () => Number((await rowOf(heldToken))?.attempts), { timeout: 20_000 }).toBe(1);
    expect(await rowOf(heldToken)).toMatchObject({ attempts: 1, last_error: 'TimeoutError', delivered_at: null, given_up_at: null, leased_until: null });

    // B's and C's sessions were found by the rounds after it, and told at once (the receiver answers 200 now).
    await expect.poll(() => postsTo('/held').map((t) => decodeJwt(t).sid), { timeout: 20_000 }).toEqual(expect.arrayContaining([bSid, cSid]));

    clock.advance(3_000);
    await expect.poll(() => postsTo('/held').filter((t) => t === heldToken).length, { timeout: 20_000 }).toBe(2);
    await expect.poll(async () => (await rowOf(heldToken))?.delivered_at ?? null, { timeout: 10_000 }).not.toBeNull();
    const rows = await deliveries(held.id);
    expect(rows.map((r) => [decodeJwt(r.logout_token).sid, Number(r.attempts), r.delivered_at !== null])).toEqual(
      expect.arrayContaining([[aSid, 2, true], [bSid, 1, true], [cSid, 1, true]]),
    );
    expect(rows).toHaveLength(3);
  }, LONG);
});

describe('signing in again for prompt=login and max_age, without acr_values, with no second factor', () => {
  /** The login page is shown; the person signs in on it; the code's tokens, and the clock's seconds around the sign-in. */
  async function signInAgain(agent: UserAgent, asked: Awaited<ReturnType<typeof request>>) {
    const login = await agent.go(asked.url.toString());
    expect(login.location).toBeNull();
    expect(login.html).toContain('action="/oidc/login"');
    const before = Math.floor(clock.now() / 1000);
    const done = await agent.submit(login, { email: person.email, password: person.password });
    const after = Math.floor(clock.now() / 1000);
    // Consented before: straight back to the application.
    expect(done.location, done.html.slice(0, 300)).toMatch(/^http:\/\/127\.0\.0\.1:9\/callback\?code=/);
    return { tokens: await asked.redeem(done.location ?? ''), before, after };
  }

  it('prompt=login with max_age: a session older than max_age signs in again; auth_time is the new sign-in, amr pwd, acr 1', async () => {
    const { config } = await app();
    const agent = new UserAgent();
    const first = (await signIn(config, agent)).claims();
    clock.advance(10_000);
    // The browser has a live session: without prompt or max_age, a code at once (prompt=none works).
    const silent = await request(config, { prompt: 'none' });
    const straight = await agent.go(silent.url.toString());
    expect(straight.location).toMatch(/^http:\/\/127\.0\.0\.1:9\/callback\?code=/);
    expect((await silent.redeem(straight.location ?? '')).claims()?.auth_time).toBe(first?.auth_time);

    const { tokens, before, after } = await signInAgain(agent, await request(config, { prompt: 'login', max_age: '5' }));
    const claims = tokens.claims();
    expect(claims).toMatchObject({ sub: expect.any(String), acr: '1' });
    expect(claims?.amr).toContain('pwd');
    expect(claims?.auth_time).toBeGreaterThanOrEqual(before);
    expect(claims?.auth_time).toBeLessThanOrEqual(after);
    expect(claims?.auth_time).toBeGreaterThan(first?.auth_time ?? Infinity);
  }, LONG);

  it('max_age alone: a fresh enough session goes straight through; once older, the login page again, with the new auth_time', async () => {
    const { config } = await app();
    const agent = new UserAgent();
    const first = (await signIn(config, agent)).claims();

    const fresh = await request(config, { max_age: '5' });
    const straight = await agent.go(fresh.url.toString());
    expect(straight.location).toMatch(/^http:\/\/127\.0\.0\.1:9\/callback\?code=/);
    expect((await fresh.redeem(straight.location ?? '')).claims()?.auth_time).toBe(first?.auth_time);

    clock.advance(10_000);
    const { tokens, before, after } = await signInAgain(agent, await request(config, { max_age: '5' }));
    const claims = tokens.claims();
    expect(claims).toMatchObject({ acr: '1' });
    expect(claims?.amr).toContain('pwd');
    expect(claims?.auth_time).toBeGreaterThanOrEqual(before);
    expect(claims?.auth_time).toBeLessThanOrEqual(after);
    expect(claims?.auth_time).toBeGreaterThan(first?.auth_time ?? Infinity);
  }, LONG);
});

describe('the RP-initiated logout question in a real browser', () => {
  let browser: Browser;
  let site: Server;
  let siteUrl: string;
  let reading: Awaited<ReturnType<typeof app>>;

  beforeAll(async () => {
    site = createServer((_req, res) => res.end('<!doctype html><title>Reading List</title><p>Back in the application.</p>'));
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    reading = await app({ name: 'Reading List', redirect: `${siteUrl}/callback`, postLogout: `${siteUrl}/signed-out` });
    browser = await launchBrowser();
  }, LONG);
  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => site.close(() => resolve()));
  });

  /** Signs the person in to Reading List in a new browser context (no JavaScript: the pages work without it). */
  async function signedInPage() {
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    const asked = await request(reading.config, {}, `${siteUrl}/callback`);
    await page.goto(asked.url.toString());
    await page.getByLabel('Email').fill(person.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    // The consent page the first time only: the person consented to Reading List once.
    const back = (url: URL) => url.toString().startsWith(`${siteUrl}/callback?code=`);
    await page.waitForURL((url) => back(url) || url.pathname === '/oidc/consent');
    if (!back(new URL(page.url()))) await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(back);
    await asked.redeem(page.url());
    return { context, page };
  }

  /** A prompt=none request in that browser: the application is sent back with `login_required`. */
  async function expectSignedOut(page: Awaited<ReturnType<typeof signedInPage>>['page']) {
    const silent = await request(reading.config, { prompt: 'none' }, `${siteUrl}/callback`);
    await page.goto(silent.url.toString());
    await page.waitForURL((url) => url.toString().startsWith(`${siteUrl}/callback?`));
    const back = new URL(page.url());
    expect(back.searchParams.get('error')).toBe('login_required');
    expect(back.searchParams.get('state')).toBe(silent.state);
  }

  it('without id_token_hint: asks, "Sign out" ends the session, and lands on the post_logout_redirect_uri with state', async () => {
    const { context, page } = await signedInPage();
    const end = new URL(`${server.url}/oidc/logout`);
    end.search = new URLSearchParams({ client_id: reading.id, post_logout_redirect_uri: `${siteUrl}/signed-out`, state: 'see-you' }).toString();
    await page.goto(end.toString());
    await expect.poll(() => page.title()).toBe('Sign out?');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Sign out?');
    await expect.poll(() => page.getByRole('paragraph').first().textContent()).toContain('Reading List asks to sign you out.');
    const button = page.getByRole('button', { name: 'Sign out' });
    expect(await button.count()).toBe(1);
    await button.click();
    await page.waitForURL((url) => url.toString().startsWith(`${siteUrl}/signed-out`));
    expect(page.url()).toBe(`${siteUrl}/signed-out?state=see-you`);
    await expectSignedOut(page);
    await context.close();
  }, LONG);

  it('without id_token_hint nor post_logout_redirect_uri: "Sign out" ends the session and shows "You are signed out"', async () => {
    const { context, page } = await signedInPage();
    await page.goto(`${server.url}/oidc/logout?client_id=${encodeURIComponent(reading.id)}`);
    await expect.poll(() => page.title()).toBe('Sign out?');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect.poll(() => page.title()).toBe('You are signed out');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('You are signed out');
    expect(new URL(page.url()).origin).toBe(server.url);
    await expectSignedOut(page);
    await context.close();
  }, LONG);
});
