/** What the accounts procedures refuse before any service runs, called without HTTP. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServices, type TestServices } from '../helpers/caller.ts';

let t: TestServices;
beforeAll(async () => {
  t = await startServices();
});
afterAll(() => t.close());

describe('an input the schema refuses', () => {
  it('a missing field is a MissingRequiredError naming it', async () => {
    await expect(t.caller().accounts.login({ id: 'someone@example.org' } as never)).rejects.toMatchObject({
      cause: { name: 'MissingRequiredError', status: 400, details: { path: 'password' } },
    });
  });

  it('an empty field is a ValidationError naming it', async () => {
    await expect(t.caller().accounts.login({ id: 'someone@example.org', password: '' })).rejects.toMatchObject({
      cause: { name: 'ValidationError', status: 400, details: { path: 'password' } },
    });
  });

  it('a key the schema does not know is an AdditionalPropertiesError naming it', async () => {
    await expect(t.caller().accounts.tildeUsername({ first: 'Ada', last: 'Lovelace', nickname: 'Countess' } as never)).rejects.toMatchObject({
      cause: { name: 'AdditionalPropertiesError', status: 400, message: expect.stringContaining('nickname') },
    });
  });

  it('a session lifetime past one week is refused, naming expiresIn', async () => {
    await expect(t.caller().accounts.login({ id: 'someone@example.org', password: 'x', expiresIn: 7 * 24 * 3600 + 1 })).rejects.toMatchObject({
      cause: { name: 'ValidationError', details: { path: 'expiresIn' } },
    });
  });
});

describe('the tilde-username rule', () => {
  it('gives the next free username of a name', async () => {
    expect(await t.caller().accounts.tildeUsername({ first: 'Ada', last: 'Lovelace' })).toEqual({ username: '~Ada_Lovelace1' });
  });

  it('refuses a name with a digit, naming the part and its field', async () => {
    await expect(t.caller().accounts.tildeUsername({ first: 'R2D2', last: 'Droid' })).rejects.toMatchObject({
      cause: {
        name: 'ValidationError',
        status: 400,
        message: 'The name R2D2 is invalid. Only letters, single hyphens, single dots at the end of a name, and single spaces are allowed',
        details: { path: 'first' },
      },
    });
  });
});

describe('a procedure that needs a session', () => {
  it('refuses a caller without one with 401', async () => {
    await expect(t.caller().accounts.profiles({})).rejects.toMatchObject({ cause: { name: 'UnauthorizedError', status: 401, message: 'You must be logged in to do this.' } });
  });

  it('refuses a token that is not one of ours with 401', async () => {
    await expect(t.caller({ accessToken: 'not-a-token' }).accounts.profiles({})).rejects.toMatchObject({ cause: { name: 'UnauthorizedError', status: 401 } });
  });
});
