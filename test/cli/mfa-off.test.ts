/**
 * `npm run admin -- mfa off`: the way back in for a person who lost every factor and every
 * recovery code. Run as an operator would, against the database of a running server.
 */
import { rm } from 'node:fs/promises';
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readOutbox } from '../helpers/outbox.ts';
import { runAdmin } from '../helpers/admin.ts';
import { startServer, tempDir, type TestServer } from '../helpers/server.ts';
import { Client } from '../helpers/http.ts';
import { createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';

/** Runs `npm run admin` as processes of their own. */
const LONG = { timeout: 60_000 };

let dir: string;
let server: TestServer;

const admin = (...args: string[]) => runAdmin({ DATA_DIR: dir }, ...args);

beforeAll(async () => {
  dir = await tempDir();
  server = await startServer({}, dir);
});
afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

describe('npm run admin -- mfa off', () => {
  it('turns every factor off for the person, audited with the reason, and mails them', LONG, async () => {
    const user = await createActiveUser(server);
    const { client } = await loggedIn(server, user.email);
    const init = await client.post('/mfa/setup/totp/init');
    await client.post('/mfa/setup/totp/verify', { code: TOTP.generate({ secret: Secret.fromBase32(init.body.secret) }) });
    expect((await new Client(server.url).post('/login', { id: user.email, password: PASSWORD })).body.mfaPending).toBe(true);

    const missing = await admin('mfa', 'off', '--user', user.email);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('reason');
    const unknown = await admin('mfa', 'off', '--user', 'nobody@example.org', '--reason', 'x');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('error: No profile nobody@example.org\n');

    const res = await admin('mfa', 'off', '--user', user.email, '--reason', 'identity checked by video call, ticket 42');
    expect(res).toMatchObject({ code: 0, stdout: `${user.id}\tmulti-factor sign-in off (removed: totp)\n` });
    const login = await new Client(server.url).post('/login', { id: user.email, password: PASSWORD });
    expect(login.body).toMatchObject({ token: expect.any(String) });
    const audit = await server.service.services.db('audit_log').where({ target: user.id, action: 'mfa.disabled-by-operator' }).first();
    expect(audit).toMatchObject({ actor: 'operator', reason: 'identity checked by video call, ticket 42' });
    const mails = (await readOutbox(dir)).filter((m) => m.to === user.email && m.subject === 'Your sign-in settings changed');
    expect(mails.at(-1)?.text).toContain('An operator turned multi-factor sign-in off for your account');
    expect(await server.service.services.db('mfa_recovery_codes').where({ profile_id: user.id })).toEqual([]);
  });
});
