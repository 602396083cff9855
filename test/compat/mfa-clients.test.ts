/**
 * Multi-factor sign-in as the real platform's clients speak it, request by request:
 * - openreview-py: `openreview/api/client.py` (`login_user` at 293-320, `__request_mfa_challenge`
 *   and `__verify_mfa` at 190-202, `__resolve_mfa` at 204-228, `__handle_authorization` at
 *   160-166) and its own MFA tests (`tests/test_client.py`, class `TestMfaLogin`), which set
 *   factors up with bare `requests` calls and read the emailed code with
 *   `verification code is: \*\*(\d{6})\*\*` from a mail whose subject holds "Verification Code".
 * - openreview-web: `app/login/LoginForm.js` (reads `mfaPending`), `app/login/VerificationForm.js`
 *   (`/mfa/challenge`, `/mfa/verify` with `rememberDevice`, `method: 'recovery'`), and
 *   `app/profile/password-security/` (`/mfa/status`, `/mfa/preferred`, set-up and removal).
 * Codes are computed by `otpauth` at the server's controlled clock.
 */
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../helpers/clock.ts';
import { cookiesOf } from '../helpers/cookies.ts';
import { lastMailTo } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { PythonClient, WebClient } from './clients.ts';

let server: TestServer;
const clock = new TestClock();

beforeAll(async () => {
  server = await startServer({}, undefined, { now: clock.now });
});
afterAll(() => server.close());

/** pyotp's `TOTP(secret).now()`: SHA-1, 6 digits, 30 seconds, at the server's clock. */
function totpNow(secret: string): string {
  return TOTP.generate({ secret: Secret.fromBase32(secret), timestamp: clock.now() });
}

/** A fresh step, so that no two codes of a test collide with a code already used. */
function nextStep(): void {
  clock.advance(30_000 - (clock.now() % 30_000) + 1_000);
}

/** The test script's own `requests.post(url, headers={Authorization, User-Agent: test-script}, json=…)`. */
async function scriptPost(path: string, token: string, json?: unknown) {
  return new PythonClient(server.url).send('POST', path, { headers: { Authorization: `Bearer ${token}`, 'User-Agent': 'test-script' }, ...(json !== undefined ? { json } : {}) });
}

/**
 * `login_user` without MFA: the token the client then keeps, with which the script proves the
 * password again (`POST /mfa/reauthenticate`). Since issue 24 an access token alone, however fresh,
 * may not add a factor (a stolen one could lock the owner out); openreview-py's own
 * `TestMfaLogin` posts the set-up with the bare token, which this service refuses with 403 and
 * `details.reauthenticate` (test/regression/stolen-fresh-token-adds-a-second-factor.test.ts).
 */
async function plainLogin(email: string): Promise<string> {
  const res = await new PythonClient(server.url).send('POST', '/login', { json: { id: email, password: PASSWORD, expiresIn: null } });
  expect(res.status).toBe(200);
  expect((await scriptPost('/mfa/reauthenticate', res.json.token, { password: PASSWORD })).status).toBe(200);
  return res.json.token;
}

/** The emailed code, as the Python test reads it. */
async function emailedCode(email: string): Promise<string> {
  const mail = await lastMailTo(server.dataDir, email);
  expect(mail.subject).toContain('Verification Code');
  const code = /verification code is: \*\*(\d{6})\*\*/.exec(mail.text)?.[1];
  if (!code) throw new Error(`no code in: ${mail.text}`);
  return code;
}

describe('the Python client', () => {
  let totpUser: { id: string; email: string };
  let secret: string;

  it('test_totp_setup_and_mfa_pending_response: init, verify with totp.now(), then POST /login answers mfaPending', async () => {
    totpUser = await createActiveUser(server);
    const token = await plainLogin(totpUser.email);
    const init = await scriptPost('/mfa/setup/totp/init', token);
    expect(init.status).toBe(200);
    secret = init.json.secret;
    const verified = await scriptPost('/mfa/setup/totp/verify', token, { code: totpNow(secret) });
    expect(verified.status).toBe(200);
    const res = await new PythonClient(server.url).send('POST', '/login', { json: { id: totpUser.email, password: PASSWORD }, headers: { 'User-Agent': 'test-script' } });
    expect(res.status).toBe(200);
    expect(res.json.mfaPending).toBe(true);
    expect(typeof res.json.mfaPendingToken).toBe('string');
    expect(res.json.mfaMethods).toContain('totp');
    expect(res.json.preferredMethod).toBe('totp');
  });

  it('test_totp_login_v2 right after set-up: the code the set-up was verified with signs in (within the same step), once', async () => {
    const user = await createActiveUser(server);
    const token = await plainLogin(user.email);
    const init = await scriptPost('/mfa/setup/totp/init', token);
    const code = totpNow(init.json.secret);
    expect((await scriptPost('/mfa/setup/totp/verify', token, { code })).status).toBe(200);
    const client = new PythonClient(server.url);
    const login = await client.send('POST', '/login', { json: { id: user.email, password: PASSWORD, expiresIn: null } });
    const verified = await client.send('POST', '/mfa/verify', { json: { mfaPendingToken: login.json.mfaPendingToken, method: 'totp', code } });
    expect(verified.status).toBe(200);
    const again = await client.send('POST', '/login', { json: { id: user.email, password: PASSWORD, expiresIn: null } });
    const reused = await client.send('POST', '/mfa/verify', { json: { mfaPendingToken: again.json.mfaPendingToken, method: 'totp', code } });
    expect(reused.status).toBe(400);
  });

  it('login_user with TOTP: /login {id, password, expiresIn: null} → mfaPending; /mfa/verify {mfaPendingToken, method, code} → token and user.profile.id', async () => {
    nextStep();
    const client = new PythonClient(server.url);
    const login = await client.send('POST', '/login', { json: { id: totpUser.email, password: PASSWORD, expiresIn: null } });
    expect(login.json).toMatchObject({ mfaPending: true, mfaMethods: ['totp'] });
    // Only the methods the client knows are offered (client.py:206).
    for (const method of login.json.mfaMethods) expect(['totp', 'emailOtp', 'passkey']).toContain(method);
    const verified = await client.send('POST', '/mfa/verify', { json: { mfaPendingToken: login.json.mfaPendingToken, method: 'totp', code: totpNow(secret) } });
    expect(verified.status).toBe(200);
    // __handle_authorization: str(response['token']), response['user']['profile']['id'].
    expect(typeof verified.json.token).toBe('string');
    expect(verified.json.user.profile.id).toBe(totpUser.id);
    client.token = verified.json.token;
    const me = await client.send('GET', '/profiles');
    expect(me.status).toBe(200);
    expect(me.json.profiles[0].id).toBe(totpUser.id);
  });

  it('a wrong code is an Error body the client raises as OpenReviewException', async () => {
    const client = new PythonClient(server.url);
    const login = await client.send('POST', '/login', { json: { id: totpUser.email, password: PASSWORD, expiresIn: null } });
    const res = await client.send('POST', '/mfa/verify', { json: { mfaPendingToken: login.json.mfaPendingToken, method: 'totp', code: '000000' === totpNow(secret) ? '111111' : '000000' } });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.json).toMatchObject({ name: 'BadRequestError', message: 'Invalid verification code' });
  });

  it('test_email_otp_setup: POST /mfa/setup/email answers emailOtpEnabled true', async () => {
    const user = await createActiveUser(server);
    const token = await plainLogin(user.email);
    const res = await scriptPost('/mfa/setup/email', token);
    expect(res.status).toBe(200);
    expect(res.json.emailOtpEnabled).toBe(true);
  });

  it('login_user with emailOtp: challenge mails the code, verify with it signs in', async () => {
    const user = await createActiveUser(server);
    await scriptPost('/mfa/setup/email', await plainLogin(user.email));
    const client = new PythonClient(server.url);
    const login = await client.send('POST', '/login', { json: { id: user.email, password: PASSWORD, expiresIn: null } });
    expect(login.json).toMatchObject({ mfaPending: true, mfaMethods: ['emailOtp'], preferredMethod: 'emailOtp' });
    const challenge = await client.send('POST', '/mfa/challenge', { json: { mfaPendingToken: login.json.mfaPendingToken, method: 'emailOtp' } });
    expect(challenge.status).toBe(200);
    const code = await emailedCode(user.email);
    const verified = await client.send('POST', '/mfa/verify', { json: { mfaPendingToken: login.json.mfaPendingToken, method: 'emailOtp', code } });
    expect(verified.status).toBe(200);
    expect(verified.json.user.profile.id).toBe(user.id);
  });

  it('login without MFA is unchanged (test_login_without_mfa)', async () => {
    const user = await createActiveUser(server);
    const res = await new PythonClient(server.url).send('POST', '/login', { json: { id: user.email, password: PASSWORD, expiresIn: null } });
    expect(res.json).toMatchObject({ token: expect.any(String), user: { profile: { id: user.id } } });
    expect(res.json.mfaPending).toBeUndefined();
  });
});

describe('the web client', () => {
  const JSON_NO_BODY = { 'Content-Type': 'application/json; charset=UTF-8' };
  let user: { id: string; email: string };
  let web: WebClient;
  let secret: string;
  let recoveryCodes: string[];

  beforeAll(async () => {
    user = await createActiveUser(server);
    web = new WebClient(server.url);
    const res = await web.send('POST', '/login', { id: user.email, password: PASSWORD });
    expect(res.status).toBe(200);
  });

  it('MultiFactorAuthenticationSetup reads status; TOTPEdit inits (qrCodeDataUrl) and verifies (recoveryCodes)', async () => {
    const status = await web.send('GET', '/mfa/status');
    expect(status.json).toMatchObject({ enabled: false, methods: [] });
    const init = await web.send('POST', '/mfa/setup/totp/init', undefined, JSON_NO_BODY);
    expect(init.status).toBe(200);
    expect(init.json.qrCodeDataUrl).toMatch(/^data:image\/png;base64,/);
    secret = init.json.secret;
    const verified = await web.send('POST', '/mfa/setup/totp/verify', { code: totpNow(secret) });
    expect(verified.status).toBe(200);
    recoveryCodes = verified.json.recoveryCodes;
    expect(recoveryCodes).toHaveLength(10);
  });

  it('EmailEdit turns email codes on (no recovery codes: not the first factor); PUT /mfa/preferred; status lists both', async () => {
    const email = await web.send('POST', '/mfa/setup/email', undefined, JSON_NO_BODY);
    expect(email.status).toBe(200);
    expect(email.json.recoveryCodes).toBeUndefined();
    const preferred = await web.send('PUT', '/mfa/preferred', { method: 'emailOtp' });
    expect(preferred.status).toBe(200);
    const status = await web.send('GET', '/mfa/status');
    expect(status.json).toEqual({ enabled: true, methods: ['totp', 'emailOtp'], preferredMethod: 'emailOtp', recoveryCodesRemaining: 10, trustedDevicesCount: 0 });
  });

  it('LoginForm → LoginMFAStep → EmailVerificationForm: challenge, then verify with rememberDevice; the browser is remembered', async () => {
    const browser = new WebClient(server.url);
    const login = await browser.send('POST', '/login', { id: user.email, password: PASSWORD });
    expect(login.json).toMatchObject({ mfaPending: true, mfaMethods: ['totp', 'emailOtp'], preferredMethod: 'emailOtp' });
    const { mfaPendingToken } = login.json;
    expect((await browser.send('POST', '/mfa/challenge', { mfaPendingToken, method: 'emailOtp' })).status).toBe(200);
    const code = await emailedCode(user.email);
    const verified = await browser.send('POST', '/mfa/verify', { mfaPendingToken, method: 'emailOtp', code, rememberDevice: true });
    expect(verified.status).toBe(200);
    expect(Object.keys(cookiesOf(verified)).sort()).toEqual(['service.accessToken', 'service.device', 'service.mfaTrustedDevice', 'service.refreshToken', 'service.user']);
    // completeLogin: the session is the cookies.
    expect((await browser.send('GET', '/mfa/status')).json.trustedDevicesCount).toBe(1);
    await browser.send('POST', '/logout');
    const again = await browser.send('POST', '/login', { id: user.email, password: PASSWORD });
    expect(again.json.token).toEqual(expect.any(String));
  });

  it('TOTPVerificationForm and RecoveryCodeVerificationForm (method "recovery") with rememberDevice false', async () => {
    nextStep();
    const browser = new WebClient(server.url);
    let login = await browser.send('POST', '/login', { id: user.email, password: PASSWORD });
    const totp = await browser.send('POST', '/mfa/verify', { mfaPendingToken: login.json.mfaPendingToken, method: 'totp', code: totpNow(secret), rememberDevice: false });
    expect(totp.status).toBe(200);
    expect('service.mfaTrustedDevice' in cookiesOf(totp)).toBe(false);
    login = await new WebClient(server.url).send('POST', '/login', { id: user.email, password: PASSWORD });
    const recovery = await browser.send('POST', '/mfa/verify', { mfaPendingToken: login.json.mfaPendingToken, method: 'recovery', code: recoveryCodes[3], rememberDevice: false });
    expect(recovery.status).toBe(200);
  });

  it('RecoveryCodeCard regenerates; TOTPDelete and EmailDelete turn the factors off (a fresh session)', async () => {
    const regenerated = await web.send('POST', '/mfa/recovery-codes/regenerate', undefined, JSON_NO_BODY);
    expect(regenerated.status).toBe(200);
    expect(regenerated.json.recoveryCodes).toHaveLength(10);
    expect(regenerated.json.recoveryCodes).not.toContain(recoveryCodes[0]);
    expect((await web.send('DELETE', '/mfa/totp', undefined, JSON_NO_BODY)).status).toBe(200);
    expect((await web.send('DELETE', '/mfa/email', undefined, JSON_NO_BODY)).status).toBe(200);
    expect((await web.send('GET', '/mfa/status')).json).toMatchObject({ enabled: false, methods: [] });
  });

  it('PasskeyDelete lists passkeys as {passkeys: [...]}', async () => {
    const res = await web.send('GET', '/mfa/passkeys');
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ passkeys: [] });
  });
});
