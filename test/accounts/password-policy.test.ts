/**
 * The password policy (NIST SP 800-63B §5.1.1.2, `server/accounts/password-policy.ts`) on every
 * path that sets a password: sign-up, the operator's `user add`, a reset (API and page's
 * procedure) and a change; and "Type the code", the sign-up mail's code instead of its link.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { passwordRefusal } from '../../server/accounts/password-policy.ts';
import { Client } from '../helpers/http.ts';
import { lastMailTo } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

const COMMON = 'Password123';
const COMMON_REFUSAL = { status: 400, name: 'ValidationError', details: { path: 'password', reason: 'common', reqId: expect.any(String) } };

/** A procedure called over tRPC's HTTP link, as the typed client calls it: its answer, or its Error body thrown as `{ cause }`. */
async function procedure(path: string, input: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${server.url}/trpc/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(input) });
  const body = (await res.json()) as { result?: { data: Record<string, unknown> }; error?: { data: { error: unknown } } };
  if (body.error) throw { cause: body.error.data.error };
  return body.result?.data ?? {};
}

async function resetToken(email: string): Promise<string> {
  expect((await new Client(server.url).post('/resettable', { id: email, token: 'dev-ok' })).status).toBe(200);
  await expect.poll(async () => (await lastMailTo(server.dataDir, email).catch(() => null))?.subject).toBe('Password reset');
  const token = /\/user\/password\?token=([\w-]+)/.exec((await lastMailTo(server.dataDir, email)).text)?.[1];
  if (!token) throw new Error('no reset link');
  return token;
}

async function signUp(email: string, password: string, fullname = 'Lise Meitner') {
  return new Client(server.url).post('/register', { token: 'dev-ok', email, password, fullname });
}

describe('the password policy', () => {
  it('keeps the test helpers’ passwords allowed', () => {
    for (const password of [PASSWORD, 'Brand-New-Horse-1', 'Good-Password1', 'Operator-Pass1']) expect(passwordRefusal(password)).toBeNull();
  });

  it('refuses a common or breached password on sign-up, naming the field, and creates nothing', async () => {
    for (const password of [COMMON, 'iloveyou', 'qwertyuiop', 'P@ssw0rd', 'Dragon2024!']) {
      const res = await signUp('common@example.org', password);
      expect(res.body).toMatchObject(COMMON_REFUSAL);
    }
    expect((await new Client(server.url).post('/login', { id: 'common@example.org', password: COMMON })).status).toBe(400);
  });

  it('refuses the person’s own email, name or profile id, with a little added', async () => {
    for (const password of ['marie.curie@example.org', 'marie.curie', 'Marie-Curie-1', 'curie123']) {
      const res = await signUp('marie.curie@example.org', password, 'Marie Curie');
      expect(res.body).toMatchObject({ status: 400, name: 'ValidationError', details: { path: 'password', reason: 'personal' } });
    }
    expect((await signUp('marie.curie@example.org', 'radium and polonium', 'Marie Curie')).status).toBe(200);
  });

  it('counts characters as code points: eight emoji are enough, seven are not', async () => {
    // Seven emoji are fourteen UTF-16 code units, and still seven characters.
    const seven = await signUp('emoji7@example.org', '🔬🧪🧫🧬🔭📐🧲');
    expect(seven.body).toMatchObject({ status: 400, details: { path: 'password' } });
    expect(seven.body.message).toContain('The password must be at least 8 characters');
    expect((await signUp('emoji8@example.org', '🔬🧪🧫🧬🔭📐🧲🦠')).status).toBe(200);
    expect((await signUp('emoji9@example.org', '🔬'.repeat(9))).body).toMatchObject({ status: 400, details: { path: 'password', reason: 'repeated' } });
  });

  it('asks for no mix of characters and takes long passphrases whole, 64 characters and more', async () => {
    const long = 'when in the course of human events it becomes necessary to sign up for review';
    expect([...long].length).toBeGreaterThan(64);
    expect((await signUp('long@example.org', long)).status).toBe(200);
    expect((await signUp('lowercase@example.org', 'allsmallletters')).status).toBe(200);
    const tooLong = await signUp('toolong@example.org', 'x'.repeat(200) + 'y'.repeat(57));
    expect(tooLong.body).toMatchObject({ status: 400, details: { path: 'password' } });
  });

  it('refuses a common password on a reset through the API and the reset page’s procedure, and keeps the old one', async () => {
    const user = await createActiveUser(server, { fullname: 'Ada Lovelace' });
    const token = await resetToken(user.email);
    const api = await new Client(server.url).request('PUT', `/reset/${token}`, { password: COMMON });
    expect(api.body).toMatchObject(COMMON_REFUSAL);
    const own = await new Client(server.url).request('PUT', `/reset/${token}`, { password: 'Ada-Lovelace-1' });
    expect(own.body).toMatchObject({ status: 400, details: { path: 'password', reason: 'personal' } });
    const page = await procedure('accounts.resetPasswordInBrowser', { token, password: 'letmein1', logoutOtherSessions: true }).catch((error: unknown) => error);
    expect(page).toMatchObject({ cause: { name: 'ValidationError', details: { path: 'password', reason: 'common' } } });
    // The link still works, and the old password still signs in.
    expect((await new Client(server.url).post('/login', { id: user.email, password: PASSWORD })).status).toBe(200);
    expect((await new Client(server.url).request('PUT', `/reset/${token}`, { password: 'Analytical-Engine-2' })).status).toBe(200);
  });

  it('refuses a common password, or the person’s own email, on a change of password', async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    const common = await client.post('/password', { currentPassword: PASSWORD, newPassword: COMMON });
    expect(common.body).toMatchObject({ status: 400, name: 'ValidationError', details: { path: 'newPassword', reason: 'common' } });
    const own = await client.post('/password', { currentPassword: PASSWORD, newPassword: user.email });
    expect(own.body).toMatchObject({ status: 400, details: { path: 'newPassword', reason: 'personal' } });
    expect((await new Client(server.url).post('/login', { id: user.email, password: PASSWORD })).status).toBe(200);
  });

  it('refuses a common password for an account the operator adds (`npm run admin -- user add`)', async () => {
    const refused = await server.service.services.signUp.createUser({ email: 'op@example.org', password: COMMON, fullname: 'Op Erator', state: 'Active' }).catch((error: unknown) => error);
    expect(refused).toMatchObject({ name: 'ValidationError', details: { path: 'password', reason: 'common' } });
  });
});

describe('"Type the code": the sign-up mail’s code instead of its link', () => {
  async function signedUp(email: string): Promise<string> {
    expect((await signUp(email, 'Pitchblende-Ore-7', 'Irene Joliot')).status).toBe(200);
    await expect.poll(async () => (await lastMailTo(server.dataDir, email).catch(() => null))?.subject).toBe('Signup confirmation');
    const code = /code: (\d{6})/.exec((await lastMailTo(server.dataDir, email)).text)?.[1];
    if (!code) throw new Error('no code in the sign-up mail');
    return code;
  }
  const typeCode = (id: string, code: string) => procedure('accounts.activationFromCode', { id, code }) as Promise<{ token: string }>;

  it('leads a right code to the activation page, by a new link that replaces the mailed one', async () => {
    const code = await signedUp('irene@example.org');
    const { token } = await typeCode(' Irene@Example.org ', code);
    const shown = await new Client(server.url).get(`/activatable/${token}`);
    expect(shown.status).toBe(200);
    expect(shown.body.activatable).toMatchObject({ groupId: 'irene@example.org' });
    // The code is used up with the link it came with.
    await expect(typeCode('irene@example.org', code)).rejects.toMatchObject({ cause: { name: 'ValidationError', details: { path: 'code' } } });
  });

  it('voids the code after five wrong ones, and answers an unknown address the same way', async () => {
    const code = await signedUp('frederic@example.org');
    const wrong = code === '000000' ? '111111' : '000000';
    for (let i = 0; i < 5; i += 1) {
      await expect(typeCode('frederic@example.org', wrong)).rejects.toMatchObject({ cause: { name: 'ValidationError', message: 'That code is wrong or has expired', details: { path: 'code' } } });
    }
    await expect(typeCode('frederic@example.org', code)).rejects.toMatchObject({ cause: { message: 'That code is wrong or has expired', details: { path: 'code' } } });
    await expect(typeCode('nobody@example.org', code)).rejects.toMatchObject({ cause: { message: 'That code is wrong or has expired', details: { path: 'code' } } });
  });
});
