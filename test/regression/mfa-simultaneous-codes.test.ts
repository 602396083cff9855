/**
 * Second-factor codes sent at the same moment: one TOTP code used by two sign-ins at once signs
 * in once; a burst of wrong guesses sent together gets no more than the lockout allows checked.
 */
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_FAILED_ATTEMPTS } from '../../server/accounts/mfa/second-factor.ts';
import { TestClock } from '../helpers/clock.ts';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';

let server: TestServer;
const clock = new TestClock();

beforeAll(async () => {
  server = await startServer({}, undefined, { now: clock.now });
});
afterAll(() => server.close());

async function personWithTotp(): Promise<{ email: string; secret: string }> {
  const person = await createActiveUser(server);
  const { client } = await loggedIn(server, person.email);
  const init = await client.post('/mfa/setup/totp/init');
  await client.post('/mfa/setup/totp/verify', { code: TOTP.generate({ secret: Secret.fromBase32(init.body.secret), timestamp: clock.now() }) });
  clock.advance(30_000 - (clock.now() % 30_000) + 1_000);
  return { email: person.email, secret: init.body.secret };
}

async function pending(email: string): Promise<string> {
  return (await new Client(server.url).post('/login', { id: email, password: PASSWORD })).body.mfaPendingToken;
}

describe('simultaneous second-factor codes', () => {
  it('one TOTP code sent by two sign-ins at once opens one session', async () => {
    const person = await personWithTotp();
    const code = TOTP.generate({ secret: Secret.fromBase32(person.secret), timestamp: clock.now() });
    const tokens = await Promise.all([pending(person.email), pending(person.email), pending(person.email)]);
    const answers = await Promise.all(tokens.map((t) => new Client(server.url).post('/mfa/verify', { mfaPendingToken: t, method: 'totp', code })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 400, 400]);
  });

  it('twelve wrong guesses sent together: at most the lockout’s count are checked, the rest are refused as locked', async () => {
    const person = await personWithTotp();
    const token = await pending(person.email);
    const guesses = Array.from({ length: 12 }, (_, i) => String(100000 + i));
    const answers = await Promise.all(guesses.map((code) => new Client(server.url).post('/mfa/verify', { mfaPendingToken: token, method: 'totp', code })));
    const checked = answers.filter((a) => a.status === 400).length;
    expect(checked).toBeLessThan(MAX_FAILED_ATTEMPTS);
    expect(answers.filter((a) => a.status === 429)).toHaveLength(12 - checked);
    for (const a of answers.filter((x) => x.status === 429)) expect(a.body.message).toContain('Account temporarily locked due to too many failed MFA attempts');
  });
});
