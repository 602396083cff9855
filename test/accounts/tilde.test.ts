import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nameParts, smallestFreeNumber, splitUsername, tildeBase } from '../../server/accounts/tilde.ts';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

describe('tilde usernames from names', () => {
  it.each([
    [{ first: 'Ada', last: 'Lovelace' }, '~Ada_Lovelace'],
    [{ first: 'Ada', middle: 'King', last: 'Lovelace' }, '~Ada_King_Lovelace'],
    [{ first: 'ada', last: 'lovelace' }, '~ada_lovelace'],
    [{ first: 'McKenzie', last: 'DeWitt' }, '~McKenzie_DeWitt'],
    [{ first: 'Jean-Luc', last: 'Picard' }, '~Jean-Luc_Picard'],
    [{ first: 'Mary Ann', last: 'Evans' }, '~Mary_Ann_Evans'],
    [{ first: 'J.', middle: 'R. R.', last: 'Tolkien' }, '~J._R._R._Tolkien'],
    [{ first: 'Martin', last: 'Luther King Jr.' }, '~Martin_Luther_King_Jr.'],
    [{ first: 'José', last: 'Martínez' }, '~José_Martínez'],
    [{ first: 'Zoë', last: 'Ångström' }, '~Zoë_Ångström'],
    [{ first: '明', last: '王' }, '~明_王'],
    [{ first: 'Дмитрий', last: 'Менделеев' }, '~Дмитрий_Менделеев'],
    [{ first: 'Γιώργος', last: 'Παπαδόπουλος' }, '~Γιώργος_Παπαδόπουλος'],
    [{ first: 'محمد', last: 'الخوارزمي' }, '~محمد_الخوارزمي'],
    [{ first: '  Ada ', last: ' Lovelace  ' }, '~Ada_Lovelace'],
    [{ fullname: 'Grace Brewster Hopper' }, '~Grace_Brewster_Hopper'],
    [{ fullname: '  Alan   Turing ' }, '~Alan_Turing'],
    [{ fullname: 'Plato' }, '~Plato'],
  ])('%j → %s', (name, base) => {
    expect(tildeBase(name)).toBe(base);
  });

  it.each([
    [{ first: 'Ada1', last: 'Lovelace' }, 'Ada1'],
    [{ first: 'Ada', last: 'Love--lace' }, 'Love--lace'],
    [{ first: 'Ada', last: 'Love  lace' }, 'Love  lace'],
    [{ first: 'A..', last: 'Lovelace' }, 'A..'],
    [{ first: 'Ada', last: "O'Brien" }, "O'Brien"],
    [{ first: 'Ada', last: 'Love_lace' }, 'Love_lace'],
    [{ first: '-Ada', last: 'Lovelace' }, '-Ada'],
    [{ first: 'Ada', last: 'Lovelace-' }, 'Lovelace-'],
    [{ fullname: 'Ada <script>' }, '<script>'],
  ])('%j is refused, naming %s', (name, part) => {
    expect(() => tildeBase(name)).toThrow(
      `The name ${part} is invalid. Only letters, single hyphens, single dots at the end of a name, and single spaces are allowed`,
    );
  });

  it('first, middle and last win over fullname', () => {
    expect(nameParts({ first: 'A', last: 'B', fullname: 'C D' })).toEqual(['A', 'B']);
  });

  it('takes the smallest free number, gaps included', () => {
    expect(smallestFreeNumber([])).toBe(1);
    expect(smallestFreeNumber([1, 2, 3])).toBe(4);
    expect(smallestFreeNumber([2, 3])).toBe(1);
    expect(smallestFreeNumber([1, 3])).toBe(2);
  });

  it('splits a username into base and number', () => {
    expect(splitUsername('~Ada_Lovelace12')).toEqual({ base: '~Ada_Lovelace', number: 12 });
    expect(splitUsername('~Ada_Lovelace')).toBeNull();
  });
});

describe('GET /tildeusername', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => {
    await server.close();
  });

  it('counts up past the usernames in use, per exact base', async () => {
    const http = new Client(server.url);
    const next = async (query: string) => (await http.get(`/tildeusername?${query}`)).body.username;
    expect(await next('first=Ada&last=Lovelace')).toBe('~Ada_Lovelace1');
    for (const email of ['a1@example.org', 'a2@example.org']) {
      expect((await http.post('/register', { token: 'dev-ok', email, password: 'Analytical-Engine1', fullname: 'Ada Lovelace' })).status).toBe(200);
    }
    expect(await next('first=Ada&last=Lovelace')).toBe('~Ada_Lovelace3');
    expect(await next('fullname=Ada%20Lovelace')).toBe('~Ada_Lovelace3');
    // Case is kept, so a different case is a different base.
    expect(await next('first=ada&last=lovelace')).toBe('~ada_lovelace1');
    expect(await next('first=Ada&middle=King&last=Lovelace')).toBe('~Ada_King_Lovelace1');
  });

  it('an invalid name is a 400 Error body', async () => {
    const res = await new Client(server.url).get('/tildeusername?first=R2D2&last=Droid');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      status: 400,
      name: 'ValidationError',
      message: 'The name R2D2 is invalid. Only letters, single hyphens, single dots at the end of a name, and single spaces are allowed',
      details: { path: 'first', reqId: expect.any(String) },
    });
  });
});
