/**
 * The metrics after a scripted day, read as Prometheus reads them (the listener of
 * `METRICS_PORT`, parsed by a real text-format parser): sign-ups, sign-ins with every method
 * (password, TOTP, a code by mail, a recovery code, a passkey, an application's sign-in through the
 * provider), wrong passwords up to a rate limit, a second-step lockout, uploads whole and in
 * chunks, and each is found with its count. No label carries an id, an email, a token or a path
 * the route table does not have; the public port does not serve the metrics.
 */
import * as oidcClient from 'openid-client';
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes } from '../../server/http/routes.ts';
import { startMetricsServer, type MetricsServer } from '../../server/metrics/server.ts';
import { pdfBytes, sha1, SUBMISSION, venueWithAuthor } from '../attachments/helpers.ts';
import { TestClock } from '../helpers/clock.ts';
import { cookieHeader } from '../helpers/cookies.ts';
import { Client, sendMultipart } from '../helpers/http.ts';
import { lastMailTo } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD, registerAndGetToken } from '../helpers/users.ts';
import { authorizationRequest, REDIRECT, relyingParty, UserAgent } from '../oidc/helpers.ts';
import { scrape, type Scrape } from './scrape.ts';
import { SoftAuthenticator } from './soft-authenticator.ts';

const clock = new TestClock();
let server: TestServer;
let metrics: MetricsServer;
/** The metrics after the day. */
let day: Scrape;
/** How many mails the outbox had sent when the day was scraped. */
let mailsSent = 0;
/** The status of the day's read of a PDF by its URL. */
let pdfStatus = 0;
/** What the day did that a label must never show. */
const secrets: string[] = [];
const CLIENT_ID = 'metrics-app';

/** What the day did, counted by the test as it goes. */
const did = {
  passwordOk: 0,
  passwordFailed: 0,
  secondStepAsked: 0,
  login200: 0,
  login400: 0,
  login429: 0,
};

/** `POST /login` with a fresh browser (no device cookie: strangers' allowance), tallied. */
async function login(id: string, password = PASSWORD, client = new Client(server.url)) {
  const res = await client.post('/login', { id, password });
  if (res.status === 200) did.login200 += 1;
  if (res.status === 400) did.login400 += 1;
  if (res.status === 429) did.login429 += 1;
  if (res.status === 200 && res.body.mfaPending) did.secondStepAsked += 1;
  else if (res.status === 200) did.passwordOk += 1;
  else did.passwordFailed += 1;
  return { client, res };
}

/** A signed-in browser, as `loggedIn` makes one, tallied. */
async function signedIn(email: string): Promise<Client> {
  const { client, res } = await login(email);
  expect(res.body.token).toEqual(expect.any(String));
  return client;
}

const totpAt = (secret: string, at: number) => TOTP.generate({ secret: Secret.fromBase32(secret), timestamp: at });
/** To the next 30-second step: a TOTP code is taken once. */
const nextStep = () => clock.advance(30_000 - (clock.now() % 30_000) + 1_000);

beforeAll(async () => {
  server = await startServer({ METRICS_PORT: '0' }, undefined, { now: clock.now });
  const listener = await startMetricsServer(server.service, server.config);
  if (!listener) throw new Error('no metrics listener with METRICS_PORT=0');
  metrics = listener;

  // Sign-ups: two people register (their activation mails are read from the outbox).
  for (const n of [1, 2]) {
    const { id, token } = await registerAndGetToken(server, { email: `signup${n}-${process.pid}@example.org` });
    secrets.push(id, token, `signup${n}-${process.pid}@example.org`);
  }

  // A password: right, then wrong.
  const pat = await createActiveUser(server);
  secrets.push(pat.id, pat.email);
  const patClient = await signedIn(pat.email);
  await login(pat.email, 'not-the-password');

  // Wrong passwords for an account until its limit says no (the eleventh: human verification asked).
  const stranger = `nobody-${process.pid}@example.org`;
  secrets.push(stranger);
  for (let i = 0; i < 11; i += 1) await login(stranger, 'guess-again');

  // TOTP: turned on, then a sign-in with a code, one with a recovery code, and a lockout.
  const tess = await createActiveUser(server);
  secrets.push(tess.id, tess.email);
  const tessClient = await signedIn(tess.email);
  const init = await tessClient.post('/mfa/setup/totp/init');
  const secret: string = init.body.secret;
  const enabled = await tessClient.post('/mfa/setup/totp/verify', { code: totpAt(secret, clock.now()) });
  expect(enabled.status).toBe(200);
  const recoveryCodes: string[] = enabled.body.recoveryCodes;
  secrets.push(secret, ...recoveryCodes);
  nextStep();
  const second = await login(tess.email);
  expect((await second.client.post('/mfa/verify', { mfaPendingToken: second.res.body.mfaPendingToken, method: 'totp', code: totpAt(secret, clock.now()) })).status).toBe(200);
  const third = await login(tess.email);
  expect((await third.client.post('/mfa/verify', { mfaPendingToken: third.res.body.mfaPendingToken, method: 'recovery', code: recoveryCodes[0] })).status).toBe(200);
  const guessed = await login(tess.email);
  const wrong = totpAt(secret, clock.now() + 10 * 60_000);
  const refusals = [];
  for (let i = 0; i < 5; i += 1) refusals.push((await guessed.client.post('/mfa/verify', { mfaPendingToken: guessed.res.body.mfaPendingToken, method: 'totp', code: wrong })).status);
  expect(refusals).toEqual([400, 400, 400, 400, 429]);
  secrets.push(second.res.body.mfaPendingToken, guessed.res.body.mfaPendingToken);

  // A code by mail: turned on, then a sign-in with it.
  const emil = await createActiveUser(server);
  secrets.push(emil.id, emil.email);
  expect((await (await signedIn(emil.email)).post('/mfa/setup/email')).status).toBe(200);
  const mailed = await login(emil.email);
  expect((await mailed.client.post('/mfa/challenge', { mfaPendingToken: mailed.res.body.mfaPendingToken, method: 'emailOtp' })).status).toBe(200);
  const code = /verification code is: \*\*(\d{6})\*\*/.exec((await lastMailTo(server.dataDir, emil.email)).text)?.[1];
  expect((await mailed.client.post('/mfa/verify', { mfaPendingToken: mailed.res.body.mfaPendingToken, method: 'emailOtp', code })).status).toBe(200);

  // A passkey: made after a password sign-in, then a sign-in with it alone.
  const kim = await createActiveUser(server);
  secrets.push(kim.id, kim.email);
  const kimClient = await signedIn(kim.email);
  const authenticator = new SoftAuthenticator(new URL(server.url).origin);
  const creation = await kimClient.post('/mfa/setup/passkey/init');
  const made = await kimClient.post('/mfa/setup/passkey/verify', { response: authenticator.register(creation.body), name: 'Soft key' });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  const begun = await new Client(server.url).post('/login/passkey/options');
  const passkey = await new Client(server.url).post('/login/passkey', { challengeId: begun.body.challengeId, response: authenticator.assert(begun.body.options) });
  expect(passkey.status, JSON.stringify(passkey.body)).toBe(200);
  secrets.push(passkey.body.token);

  // An application's sign-in through the provider (its login page: a password sign-in too),
  // its code redeemed for tokens; and a silent sign-in asked of a browser with no session.
  await server.service.services.oidc.addClient({ id: CLIENT_ID, name: 'Metrics App', redirectUris: [REDIRECT], scopes: ['openid', 'profile', 'email'] });
  await server.service.services.oidc.setClientStatus(CLIENT_ID, 'approved');
  const rp = await relyingParty(server, CLIENT_ID);
  const request = await authorizationRequest(rp);
  const page = await new UserAgent().authorize(request.url, { email: pat.email, password: PASSWORD });
  did.passwordOk += 1;
  expect(page.location).toMatch(/^http:\/\/127\.0\.0\.1:9\/callback\?code=/);
  const tokens = await oidcClient.authorizationCodeGrant(rp, new URL(page.location ?? ''), { pkceCodeVerifier: request.verifier, expectedState: request.state, expectedNonce: request.nonce });
  secrets.push(tokens.access_token, new URL(page.location ?? '').searchParams.get('code') ?? '');
  const silent = await new UserAgent().authorize((await authorizationRequest(rp, { prompt: 'none' })).url);
  expect(silent.location).toContain('error=login_required');

  // Uploads: a PDF whole, one refused (not a PDF), and one in two chunks (stored, then assembled).
  const { author } = await venueWithAuthor(server);
  // Its super user and its author signed in with `loggedIn`.
  did.passwordOk += 2;
  did.login200 += 2;
  const whole = pdfBytes(3000);
  const stored = await sendMultipart(author, 'PUT', '/attachment', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'paper.pdf', data: whole });
  expect(stored.body).toEqual({ url: `/pdf/${sha1(whole)}.pdf` });
  // Read back by its URL (a parameter route: `/pdf/:id`).
  pdfStatus = (await fetch(`${server.url}${stored.body.url}`, { headers: { cookie: cookieHeader(author) } })).status;
  const refused = await sendMultipart(author, 'PUT', '/attachment', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'paper.pdf', data: Buffer.alloc(500, 'x') });
  expect(refused.status).toBe(400);
  const chunked = pdfBytes(2500);
  for (const [index, part] of [chunked.subarray(0, 1500), chunked.subarray(1500)].entries()) {
    const res = await sendMultipart(author, 'PUT', '/attachment/chunk', { name: 'pdf', invitationId: SUBMISSION, clientUploadId: 'metrics-day', chunkIndex: index, totalChunks: 2 }, { filename: 'paper.pdf', data: part });
    expect(res.status).toBe(200);
  }

  // A few more requests of interest: the probes (answered without Express's router), a path
  // nobody has, tRPC, and the metrics asked of the public port.
  for (const path of ['/health/live', '/health/ready', '/no/such/path', `/trpc/accounts.tildeUsername?input=${encodeURIComponent(JSON.stringify({ fullname: 'Ada Lovelace' }))}`, '/metrics']) await fetch(`${server.url}${path}`);
  await patClient.get('/profiles');

  // Every mail of the day (activations, codes, notices) sent before the scrape.
  await server.service.services.mailer.settled();
  mailsSent = Number(((await server.service.db('mail_outbox').where({ state: 'sent' }).count({ n: '*' })) as Array<{ n: number | string }>)[0]?.n);
  day = await scrape(metrics.url);
}, 60_000);

afterAll(async () => {
  await metrics?.close();
  await server?.close();
});

describe('after a scripted day, the metrics count', () => {
  it('each sign-in by method and outcome', () => {
    const signIns = (method: string, outcome: string) => day.value('peer_review_sign_ins_total', { method, outcome });
    expect({
      password: { success: signIns('password', 'success'), second_step_required: signIns('password', 'second_step_required'), failure: signIns('password', 'failure') },
      totp: { success: signIns('totp', 'success'), failure: signIns('totp', 'failure') },
      recovery_code: { success: signIns('recovery_code', 'success'), failure: signIns('recovery_code', 'failure') },
      email_code: { success: signIns('email_code', 'success'), failure: signIns('email_code', 'failure') },
      passkey: { success: signIns('passkey', 'success'), failure: signIns('passkey', 'failure') },
      oidc: { success: signIns('oidc', 'success'), failure: signIns('oidc', 'failure') },
    }).toEqual({
      password: { success: did.passwordOk, second_step_required: did.secondStepAsked, failure: did.passwordFailed },
      totp: { success: 1, failure: 5 },
      recovery_code: { success: 1, failure: 0 },
      email_code: { success: 1, failure: 0 },
      passkey: { success: 1, failure: 0 },
      oidc: { success: 1, failure: 1 },
    });
    // What the tally holds: 7 signed in with a password alone, 1 + 11 refused, 4 asked for a second step.
    expect(did).toMatchObject({ passwordOk: 7, passwordFailed: 12, secondStepAsked: 4 });
  });

  it('the mail sent, one delivery each, and none waiting', () => {
    expect(mailsSent).toBeGreaterThanOrEqual(4);
    expect(Object.fromEntries(day.series('peer_review_mail_deliveries_total').map((s) => [s.labels.outcome, s.value]))).toEqual({ sent: mailsSent, retry: 0, failed: 0 });
    expect(day.value('peer_review_mail_outbox_messages', { status: 'pending' })).toBe(0);
    expect(day.value('peer_review_mail_oldest_pending_seconds')).toBe(0);
  });

  it('the lockout and the rate-limit refusal, by name', () => {
    expect(day.value('peer_review_lockouts_total', { lock: 'second_step' })).toBe(1);
    expect(day.value('peer_review_lockouts_total', { lock: 'second_step_browser' })).toBe(0);
    expect(day.value('peer_review_rate_limit_refusals_total', { limit: 'loginAccount' })).toBe(1);
    expect(day.value('peer_review_rate_limit_refusals_total')).toBe(1);
  });

  it('the factors turned on', () => {
    expect(Object.fromEntries(day.series('peer_review_mfa_enrolments_total').map((s) => [s.labels.factor, s.value]))).toEqual({ totp: 1, email_code: 1, passkey: 1 });
  });

  it('the tokens issued, by grant type and client', () => {
    expect(day.series('peer_review_oidc_tokens_issued_total').map((s) => ({ ...s.labels, value: s.value }))).toEqual([{ grant_type: 'authorization_code', client: CLIENT_ID, value: 1 }]);
  });

  it('the uploads: requests, bytes, chunks and the assembly', () => {
    expect(day.value('peer_review_upload_requests_total', { kind: 'whole', outcome: 'ok' })).toBe(1);
    expect(day.value('peer_review_upload_requests_total', { kind: 'whole', outcome: 'refused' })).toBe(1);
    expect(day.value('peer_review_upload_requests_total', { kind: 'chunk', outcome: 'ok' })).toBe(2);
    expect(day.value('peer_review_upload_requests_total', { outcome: 'error' })).toBe(0);
    expect(day.value('peer_review_upload_received_bytes_total', { kind: 'whole' })).toBe(3000 + 500);
    expect(day.value('peer_review_upload_received_bytes_total', { kind: 'chunk' })).toBe(2500);
    expect(day.value('peer_review_upload_chunks_stored_total')).toBe(2);
    expect(day.value('peer_review_upload_assemblies_total', { outcome: 'done' })).toBe(1);
    expect(day.value('peer_review_upload_assemblies_total', { outcome: 'refused' }) + day.value('peer_review_upload_assemblies_total', { outcome: 'error' })).toBe(0);
  });

  it('requests by route template, method and status, with their durations', () => {
    const requests = (route: string, method: string, status: string) => day.count('peer_review_http_request_duration_seconds', { route, method, status });
    expect(day.family('peer_review_http_request_duration_seconds').type).toBe('histogram');
    expect(requests('/register', 'POST', '200')).toBe(2);
    expect(requests('/login', 'POST', '200')).toBe(did.login200);
    expect(requests('/login', 'POST', '400')).toBe(did.login400);
    expect(requests('/login', 'POST', '429')).toBe(did.login429);
    expect(requests('/attachment', 'PUT', '200')).toBe(1);
    expect(requests('/attachment', 'PUT', '400')).toBe(1);
    expect(requests('/attachment/chunk', 'PUT', '200')).toBe(2);
    expect(requests('/pdf/:id', 'GET', String(pdfStatus))).toBe(1);
    // Literal GETs answered without Express's router (`directDispatch`) are counted too.
    expect(requests('/health/live', 'GET', '200')).toBe(1);
    expect(requests('/health/ready', 'GET', '200')).toBe(1);
    expect(requests('/profiles', 'GET', '200')).toBe(1);
    expect(requests('/oidc/token', 'POST', '200')).toBe(1);
    expect(requests('/trpc', 'GET', '200')).toBe(1);
    // Paths no route has share one label; the public port has no /metrics.
    expect(requests('unmatched', 'GET', '404')).toBe(2);
    const [answered] = day.histograms('peer_review_http_request_duration_seconds', { route: '/login', status: '200' });
    expect(answered?.sum).toBeGreaterThan(0);
    expect(answered?.buckets['+Inf']).toBe(answered?.count);
    expect(answered?.buckets['0.001']).toBeLessThanOrEqual(answered?.buckets['60'] ?? 0);
  });

  it('database waits, the process, the event loop and the build', async () => {
    expect(day.count('peer_review_db_pool_acquire_wait_seconds')).toBeGreaterThan(100);
    expect(day.value('peer_review_db_pool_connections', { state: 'used' }) + day.value('peer_review_db_pool_connections', { state: 'free' })).toBeGreaterThanOrEqual(1);
    expect(day.value('peer_review_db_pool_pending_acquires')).toBeGreaterThanOrEqual(0);
    expect(day.value('peer_review_db_pool_acquire_failures_total')).toBe(0);
    expect(day.family('nodejs_eventloop_lag_p99_seconds').type).toBe('gauge');
    expect(day.family('process_cpu_seconds_total').type).toBe('counter');
    const { version } = JSON.parse(await import('node:fs/promises').then((fs) => fs.readFile('package.json', 'utf8'))) as { version: string };
    expect(day.series('peer_review_build_info')).toEqual([{ labels: { version, revision: expect.stringMatching(/^([0-9a-f]{40})?$/), node_version: process.versions.node }, value: 1 }]);
  });

  it('no label carries an id, an email, a token or a path the route table does not have', () => {
    const templates = new Set([...routes.map((route) => route.path), 'unmatched']);
    let routeLabels = 0;
    for (const { metric, name, value } of day.labels()) {
      expect(value, `${metric}{${name}}`).not.toMatch(/@|~/);
      for (const secret of secrets.filter(Boolean)) expect(value, `${metric}{${name}}`).not.toContain(secret);
      if (name === 'route') {
        expect(templates.has(value), value).toBe(true);
        routeLabels += 1;
      }
    }
    expect(routeLabels).toBeGreaterThan(20);
  });
});

describe('the metrics listener', () => {
  it('answers only GET /metrics; the public port has no /metrics', async () => {
    const elsewhere = await fetch(metrics.url.replace(/\/metrics$/, '/'));
    expect(elsewhere.status).toBe(404);
    const posted = await fetch(metrics.url, { method: 'POST' });
    expect(posted.status).toBe(405);
    expect(posted.headers.get('allow')).toBe('GET, HEAD');
    const publicPort = await fetch(`${server.url}/metrics`);
    expect(publicPort.status).toBe(404);
    expect(await publicPort.json()).toMatchObject({ name: 'NotFoundError' });
    expect(new URL(metrics.url).hostname).toBe('127.0.0.1');
  });
});
