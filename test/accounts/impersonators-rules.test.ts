/**
 * Who may impersonate a person, set through `accounts.setImpersonators` and called without HTTP:
 * super users only, an empty list takes the grant back, and a bad request names what is wrong.
 * (`PUT /impersonators` in regression/impersonators-only-set-by-sql.test.ts is the same over HTTP.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionResult } from '../../shared/index.ts';
import { startServices, type TestServices } from '../helpers/caller.ts';
import { PASSWORD } from '../helpers/users.ts';

let t: TestServices;
let root: { id: string; token: string };
let counter = 0;

/** A new active person and the access token of a password sign-in. */
async function person(role?: 'superuser'): Promise<{ id: string; email: string; token: string }> {
  counter += 1;
  const email = `person${counter}@example.org`;
  const id = await t.services.signUp.createUser({ email, password: PASSWORD, fullname: 'Pat Person', state: 'Active', role });
  const { token } = (await t.caller().accounts.login({ id: email, password: PASSWORD })) as SessionResult;
  return { id, email, token };
}

const audits = (target: string) => t.services.db('audit_log').where({ target, action: 'impersonators.set' }).select('actor', 'details');

beforeAll(async () => {
  t = await startServices();
  root = await person('superuser');
});
afterAll(() => t.close());

describe('accounts.setImpersonators', () => {
  it('lets a super user name who may impersonate a person, by the person’s email or id, and audits it', async () => {
    const target = await person();
    const helper = await person();
    const set = await t.caller({ accessToken: root.token }).accounts.setImpersonators({ user: target.email, impersonators: [helper.id] });
    expect(set).toEqual({ id: target.id, impersonators: [helper.id] });
    const impersonated = await t.caller({ accessToken: helper.token }).accounts.impersonate({ groupId: target.id });
    expect(impersonated.user.profile.id).toBe(target.id);
    expect(await audits(target.id)).toEqual([{ actor: root.id, details: expect.stringContaining(helper.id) }]);
  });

  it('takes the grant back with an empty list', async () => {
    const target = await person();
    const helper = await person();
    const asRoot = t.caller({ accessToken: root.token });
    await asRoot.accounts.setImpersonators({ user: target.id, impersonators: [helper.id] });
    expect(await asRoot.accounts.setImpersonators({ user: target.id, impersonators: [] })).toEqual({ id: target.id, impersonators: [] });
    await expect(t.caller({ accessToken: helper.token }).accounts.impersonate({ groupId: target.id })).rejects.toMatchObject({
      cause: { name: 'ForbiddenError', status: 403, message: `You are not allowed to impersonate ${target.id}` },
    });
  });

  it('writes emails in lower case and names each impersonator once', async () => {
    const target = await person();
    const helper = await person();
    const set = await t.caller({ accessToken: root.token }).accounts.setImpersonators({ user: target.id, impersonators: [helper.id, ` ${helper.email.toUpperCase()} `, helper.id] });
    expect(set).toEqual({ id: target.id, impersonators: [helper.id, helper.email] });
  });

  it('is refused to anyone but a super user, and to the signed-out, changing nothing', async () => {
    const target = await person();
    const someone = await person();
    await expect(t.caller({ accessToken: someone.token }).accounts.setImpersonators({ user: target.id, impersonators: [someone.id] })).rejects.toMatchObject({
      cause: { name: 'ForbiddenError', status: 403, message: 'Only super users can set who may impersonate a person' },
    });
    await expect(t.caller().accounts.setImpersonators({ user: target.id, impersonators: [someone.id] })).rejects.toMatchObject({ cause: { name: 'UnauthorizedError', status: 401 } });
    expect(await audits(target.id)).toEqual([]);
  });

  it('names what is wrong: an unknown person, an empty id, a person named as their own impersonator', async () => {
    const target = await person();
    const asRoot = t.caller({ accessToken: root.token });
    await expect(asRoot.accounts.setImpersonators({ user: '~Nobody_Here1', impersonators: [] })).rejects.toMatchObject({ cause: { name: 'NotFoundError', status: 404, details: { path: 'user' } } });
    await expect(asRoot.accounts.setImpersonators({ user: target.id, impersonators: [''] })).rejects.toMatchObject({ cause: { status: 400 } });
    await expect(asRoot.accounts.setImpersonators({ user: target.id, impersonators: [target.id] })).rejects.toMatchObject({
      cause: { name: 'ValidationError', status: 400, message: 'A person cannot be their own impersonator', details: { path: 'impersonators' } },
    });
  });
});
