/**
 * The pages' forms as an attacker sends them, without a browser: no CSRF token, a wrong one, a
 * cross-site POST, empty and odd forms, markup in a field. None is answered 5xx, every refusal
 * is a page that says what is wrong (a CSRF refusal with the request id), and what is echoed back is escaped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes } from '../../server/http/routes.ts';
import { cookieHeader, keepCookies, sentBack } from '../helpers/cookies.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { startSiteverify, type Siteverify } from '../helpers/siteverify.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => server.close());

const FORM_PATHS = routes.filter((r) => r.path.startsWith('/account') && r.method === 'post').map((r) => r.path);

/** A browser's CSRF cookie and the token its forms carry. */
async function csrf(): Promise<{ cookie: string; token: string }> {
  const res = await fetch(`${server.url}/account/login`);
  const cookie = sentBack(res, 'service.csrf');
  const token = /name="csrf" value="([^"]+)"/.exec(await res.text())?.[1] ?? '';
  expect(cookie).not.toBe('');
  expect(cookie).toBe(`service.csrf=${token}`);
  return { cookie, token };
}

function post(path: string, form: Record<string, string>, headers: Record<string, string> = {}) {
  return fetch(`${server.url}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  });
}

describe('the pages’ forms', () => {
  it('has forms to check', () => {
    expect(FORM_PATHS.length).toBeGreaterThanOrEqual(15);
  });

  it.each(FORM_PATHS)('POST %s without the CSRF cookie, or with another token, is a 403 page with the request id', async (path) => {
    const { cookie } = await csrf();
    for (const res of [await post(path, { csrf: 'x'.repeat(32) }), await post(path, { csrf: 'x'.repeat(32) }, { cookie })]) {
      expect(res.status).toBe(403);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      const html = await res.text();
      expect(html).toContain('did not come from this site');
      expect(html).toContain(res.headers.get('x-request-id'));
    }
  });

  it.each(FORM_PATHS)('POST %s from another site is refused even with the right token', async (path) => {
    const { cookie, token } = await csrf();
    const res = await post(path, { csrf: token }, { cookie, 'sec-fetch-site': 'cross-site' });
    expect(res.status).toBe(403);
  });

  it.each(FORM_PATHS)('POST %s with an empty or odd form is never a 5xx', async (path) => {
    const { cookie, token } = await csrf();
    const forms: Array<Record<string, string>> = [{}, { token: 'x', email: 'not an email', id: '../../etc', intent: 'nonsense', password: 'a'.repeat(5000) }];
    for (const form of forms) {
      const res = await post(path, { csrf: token, ...form }, { cookie });
      expect(res.status, `${path} ${JSON.stringify(form).slice(0, 60)}`).toBeLessThan(500);
      // A refused form says what is wrong; the request id to quote is shown only for our own failures (5xx).
      if (res.status >= 400) expect(await res.text()).toMatch(/id="error-summary"|<h1>/);
    }
  });

  it.each(['/account/profile/activate', '/account/user/password'])('GET %s with a made-up, an empty or no token says the link no longer works', async (path) => {
    for (const suffix of ['?token=made-up', '?token=', '', `?token=${'a'.repeat(5000)}`]) {
      const res = await fetch(`${server.url}${path}${suffix}`);
      expect(res.status, suffix.slice(0, 20)).toBe(400);
      expect(await res.text()).toContain('This link no longer works');
    }
  });

  it('escapes what it echoes back', async () => {
    const { cookie, token } = await csrf();
    const res = await post('/account/signup', { csrf: token, fullname: '<script>alert(1)</script>', email: '"><img src=x onerror=alert(1)>@example.org', password: 'short', token: 'dev-ok' }, { cookie });
    expect(res.status).toBe(400);
    const html = await res.text();
    expect(html).not.toContain('<script>alert(1)');
    expect(html).not.toContain('<img src=x');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
  });

  it('sends a person who is not signed in to sign in first, and never elsewhere after', async () => {
    const res = await fetch(`${server.url}/account/security`, { redirect: 'manual' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/account/login?next=%2Faccount%2Fsecurity&notice=sign-in-first');
    // The confirmation form without a link's token is a signed-in person's: sign in before typing.
    const confirm = await fetch(`${server.url}/account/confirm?email=new%40example.org`, { redirect: 'manual' });
    expect([confirm.status, confirm.headers.get('location')]).toEqual([303, '/account/login?next=%2Faccount%2Fconfirm%3Femail%3Dnew%2540example.org&notice=sign-in-first']);
    const page = await (await fetch(`${server.url}/account/login?next=https://evil.example.org/`)).text();
    expect(page).toContain('name="next" value="https://evil.example.org/"');
    // Signing in with that `next` lands on our own page, not the other site.
    const { cookie, token } = await csrf();
    const { createActiveUser, PASSWORD } = await import('../helpers/users.ts');
    const user = await createActiveUser(server);
    const signedIn = await post('/account/login', { csrf: token, email: user.email, password: PASSWORD, next: '//evil.example.org/' }, { cookie });
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.get('location')).toBe('/account/security');
  });
});

describe('a signed-in person’s forms, sent empty or wrong', () => {
  /** A browser signed in on the pages: its cookies and its forms' CSRF token. */
  async function signedIn(): Promise<{ cookie: string; token: string }> {
    const { createActiveUser, PASSWORD } = await import('../helpers/users.ts');
    const user = await createActiveUser(server);
    const { cookie, token } = await csrf();
    const res = await post('/account/login', { csrf: token, email: user.email, password: PASSWORD }, { cookie });
    expect(res.status).toBe(303);
    const jar = new Map([['service.csrf', token]]);
    keepCookies(jar, res);
    return { cookie: cookieHeader(jar), token };
  }

  it.each([
    ['/account/data/delete', {}, 'Enter your password'],
    ['/account/emails/add', { alternate: '' }, 'Enter the email address to add'],
    ['/account/emails/add', { alternate: 'not-an-address' }, 'Enter an email address like name@example.org'],
    ['/account/confirm', { email: '', code: '' }, 'Enter the email address to confirm'],
    ['/account/security/password', { currentPassword: '', newPassword: '', confirmation: '' }, 'Enter your current password'],
  ])('POST %s %j is refused in plain words, with no request id to quote', async (path, form, words) => {
    const { cookie, token } = await signedIn();
    const res = await post(path, { csrf: token, ...form }, { cookie });
    expect(res.status).toBe(400);
    const html = await res.text();
    expect(html).toContain(words);
    expect(html).not.toMatch(/Too small|Invalid email|expected string|request id/);
  });
  it('an error page is titled as its heading says', async () => {
    const { cookie, token } = await signedIn();
    const res = await post('/account/security/sessions/end', { csrf: token, id: '' }, { cookie });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    const html = await res.text();
    expect(html).toMatch(/<title>This did not work\b/);
  });

  it('a link the service cannot read shows the confirmation form, not the link schema’s words', async () => {
    const res = await fetch(`${server.url}/account/confirm?token=${'x'.repeat(201)}`);
    expect(res.status).toBe(200);
    expect(await res.text()).not.toMatch(/Too big|expected string/);
  });

  it('a refused password change comes back with "Log me out of all other sessions" as it was sent', async () => {
    const { cookie, token } = await signedIn();
    for (const [sent, checked] of [[{}, false], [{ logoutOtherSessions: 'on' }, true]] as const) {
      const res = await post('/account/security/password', { csrf: token, currentPassword: 'not-the-password', newPassword: 'A-New-Secret-Phrase-1', confirmation: 'A-New-Secret-Phrase-1', ...sent }, { cookie });
      expect(res.status).toBe(400);
      const box = /<input id="password-logout"[^>]*>/.exec(await res.text())?.[0] ?? '';
      expect(box.includes(' checked'), box).toBe(checked);
    }
  });
});

describe('human verification on the pages, with a verification service configured', () => {
  let verified: TestServer;
  // A stand-in for Turnstile's `siteverify`: "human-ok" is a person's answer.
  let siteverify: Siteverify;

  beforeAll(async () => {
    siteverify = await startSiteverify((form) => form.get('response') === 'human-ok');
    verified = await startServer({
      HUMAN_VERIFICATION_URL: siteverify.url,
      HUMAN_VERIFICATION_SECRET: 'secret',
      HUMAN_VERIFICATION_SITE_KEY: 'site-key-1',
    });
  });
  afterAll(async () => {
    await verified.close();
    await siteverify.close();
  });

  it.each(['signup', 'reset'])('/account/%s shows the Turnstile widget with the site key, and allows its script and frame only there', async (path) => {
    const res = await fetch(`${verified.url}/account/${path}`);
    const html = await res.text();
    expect(html).toContain('data-sitekey="site-key-1"');
    expect(html).toContain('src="https://challenges.cloudflare.com/turnstile/v0/api.js"');
    expect(html).not.toContain('dev-ok');
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self' https://challenges.cloudflare.com; frame-src https://challenges.cloudflare.com");
    const login = await fetch(`${verified.url}/account/login`);
    expect(login.headers.get('content-security-policy')).not.toContain('challenges.cloudflare.com');
  });

  it('sends the widget’s answer to the verification service: a person signs up, a robot is told why not', async () => {
    const page = await fetch(`${verified.url}/account/signup`);
    const cookie = sentBack(page, 'service.csrf');
    const token = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
    const form = { csrf: token, fullname: 'Katherine Johnson', email: 'katherine@example.org', password: 'Correct-Horse-9' };
    const send = (answer: Record<string, string>) =>
      fetch(`${verified.url}/account/signup`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
        body: new URLSearchParams({ ...form, ...answer }).toString(),
      });
    const robot = await send({ 'cf-turnstile-response': 'robot' });
    expect(robot.status).toBe(400);
    expect(await robot.text()).toContain('Human verification failed');
    const person = await send({ token: 'human-ok' });
    expect(person.status).toBe(303);
    expect(person.headers.get('location')).toBe('/account/check-mail?kind=signup&email=katherine%40example.org');
    expect(siteverify.seen.map((form) => form.get('response'))).toEqual(['robot', 'human-ok']);
  });
});
