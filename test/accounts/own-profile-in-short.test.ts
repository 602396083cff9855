/**
 * `accounts.me`: the signed-in person's own profile in short, which the pages' header and the
 * provider's consent page show (`web/pages/kit.ts`, `web/pages/provider/`), called without HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionResult } from '../../shared/index.ts';
import { startServices, type TestServices } from '../helpers/caller.ts';
import { activePerson, PASSWORD } from '../helpers/users.ts';

let t: TestServices;
beforeAll(async () => {
  t = await startServices();
});
afterAll(() => t.close());

describe('accounts.me', () => {
  it('answers the caller’s own id, name and preferred email', async () => {
    const email = await activePerson(t.services);
    const session = (await t.caller().accounts.login({ id: email, password: PASSWORD })) as SessionResult;
    const me = await t.caller({ accessToken: session.token }).accounts.me();
    expect(me).toEqual(session.user.profile);
    expect(me).toMatchObject({ id: expect.stringMatching(/^~/), preferredEmail: email, fullname: expect.any(String) });
  });

  it('refuses a caller without a session, and one whose token is not a session', async () => {
    await expect(t.caller().accounts.me()).rejects.toMatchObject({ cause: { name: 'UnauthorizedError', status: 401 } });
    await expect(t.caller({ accessToken: 'not-a-token' }).accounts.me()).rejects.toMatchObject({ cause: { status: 401 } });
  });
});
