/** The typed client's multi-factor sign-in: `login` says a second factor is needed, `completeMfa` finishes. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, MfaRequiredError } from '../../client/index.ts';
import { lastMailTo } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

describe('the typed client with a second factor', () => {
  it('login throws MfaRequiredError with the pending sign-in; challenge and completeMfa sign in', async () => {
    const user = await createActiveUser(server);
    const setup = createClient({ baseUrl: server.url });
    await setup.login({ id: user.email, password: PASSWORD });
    expect(await setup.api.accounts.mfa.emailSetup.mutate()).toMatchObject({ emailOtpEnabled: true });

    const client = createClient({ baseUrl: server.url });
    const error = await client.login({ id: user.email, password: PASSWORD }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MfaRequiredError);
    const { pending } = error as MfaRequiredError;
    expect(pending).toMatchObject({ mfaPending: true, mfaMethods: ['emailOtp'], preferredMethod: 'emailOtp' });
    expect(client.token).toBeUndefined();

    await client.api.accounts.mfa.challenge.mutate({ mfaPendingToken: pending.mfaPendingToken, method: 'emailOtp' });
    const code = /\*\*(\d{6})\*\*/.exec((await lastMailTo(server.dataDir, user.email)).text)?.[1] ?? '';
    const session = await client.completeMfa({ mfaPendingToken: pending.mfaPendingToken, method: 'emailOtp', code });
    expect(session.user.profile.id).toBe(user.id);
    expect(client.token).toBe(session.token);
    expect((await client.api.accounts.mfa.status.query()).methods).toEqual(['emailOtp']);
  });
});
