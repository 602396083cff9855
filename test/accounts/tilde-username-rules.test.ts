/**
 * The tilde-username rules through `accounts.tildeUsername`, called without HTTP: which number
 * the next person of a name gets, and which field a refused name is reported under.
 * (`GET /tildeusername` in tilde.test.ts is the same rule over HTTP.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServices, type TestServices } from '../helpers/caller.ts';
import { PASSWORD } from '../helpers/users.ts';

let t: TestServices;
beforeAll(async () => {
  t = await startServices();
  for (const [i, fullname] of ['Ada Lovelace', 'Ada Lovelace', 'Grace Hopper'].entries()) {
    await t.services.signUp.createUser({ email: `person${i}@example.org`, password: PASSWORD, fullname, state: 'Active' });
  }
});
afterAll(() => t.close());

const next = async (name: Record<string, string>) => (await t.caller().accounts.tildeUsername(name)).username;
const INVALID = (part: string) => `The name ${part} is invalid. Only letters, single hyphens, single dots at the end of a name, and single spaces are allowed`;

describe('accounts.tildeUsername', () => {
  it('counts up past the usernames in use, whether the name is given in parts or whole', async () => {
    expect(await next({ first: 'Ada', last: 'Lovelace' })).toBe('~Ada_Lovelace3');
    expect(await next({ fullname: 'Ada Lovelace' })).toBe('~Ada_Lovelace3');
    expect(await next({ first: 'Grace', last: 'Hopper' })).toBe('~Grace_Hopper2');
  });

  it('counts per exact base: another case or a middle name is another base', async () => {
    expect(await next({ first: 'ada', last: 'lovelace' })).toBe('~ada_lovelace1');
    expect(await next({ first: 'Ada', middle: 'King', last: 'Lovelace' })).toBe('~Ada_King_Lovelace1');
  });

  it('trims the parts, splits a full name on any run of spaces, and lets the parts win over a full name', async () => {
    expect(await next({ first: '  Alan ', last: ' Turing  ' })).toBe('~Alan_Turing1');
    expect(await next({ fullname: '  Alan   Mathison  Turing ' })).toBe('~Alan_Mathison_Turing1');
    expect(await next({ first: 'Alan', last: 'Turing', fullname: 'Grace Hopper' })).toBe('~Alan_Turing1');
  });

  it.each([
    [{ first: 'R2D2', last: 'Droid' }, 'R2D2', 'first'],
    [{ first: 'Ada', middle: 'K1ng', last: 'Lovelace' }, 'K1ng', 'middle'],
    [{ first: 'Ada', last: "O'Brien" }, "O'Brien", 'last'],
    [{ fullname: 'Ada <script>' }, '<script>', 'fullname'],
  ])('refuses %j, naming the part %s and its field %s', async (name, part, path) => {
    await expect(next(name)).rejects.toMatchObject({ cause: { name: 'ValidationError', status: 400, message: INVALID(part), details: { path } } });
  });

  it('refuses a query without any name, naming fullname', async () => {
    await expect(next({ first: ' ', last: '' })).rejects.toMatchObject({
      cause: { name: 'ValidationError', status: 400, message: 'A name is required: give first and last, or fullname', details: { path: 'fullname' } },
    });
  });
});
