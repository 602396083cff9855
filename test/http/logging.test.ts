import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes } from '../../server/http/routes.ts';
import { redactUrl } from '../../server/logger.ts';
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

describe('logs', () => {
  it('never hold a password, a session token, a refresh token or a one-time token', async () => {
    const user = await createActiveUser(server);
    const { client, token } = await loggedIn(server, user.email);
    const refresh = client.jar.get('service.refreshToken') ?? '';
    await client.post('/refreshToken');
    await new Client(server.url).post('/login', { id: user.email, password: 'Wrong-Password-77' });
    await new Client(server.url).post('/register', { token: 'dev-ok', email: 'log@example.org', password: 'Registered-Pass1', fullname: 'Log Reader' });
    const activation = /token=([\w-]+)/.exec((await lastMailTo(server.dataDir, 'log@example.org')).text)?.[1] ?? '';
    await new Client(server.url).get(`/activatable/${activation}`);
    await new Client(server.url).get(`/nowhere?token=${activation}&code=123456`);

    const text = server.logs.join('\n');
    expect(text.length).toBeGreaterThan(0);
    for (const secret of [PASSWORD, 'Wrong-Password-77', 'Registered-Pass1', token, refresh, activation]) {
      expect(secret.length).toBeGreaterThan(8);
      expect(text).not.toContain(secret);
    }
    expect(text).toContain('/activatable/[redacted]');
    for (const line of server.logs) expect(() => JSON.parse(line)).not.toThrow();
  });
});

describe('redactUrl', () => {
  it.each([
    ['/activate/abc123', '/activate/[redacted]'],
    ['/activatable/abc123', '/activatable/[redacted]'],
    ['/activatelink/abc', '/activatelink/[redacted]'],
    ['/resettable/abc', '/resettable/[redacted]'],
    ['/reset/abc', '/reset/[redacted]'],
    ['/user/confirm/abc', '/user/confirm/[redacted]'],
    ['/activatable', '/activatable'],
    ['/oidc/authorize?client_id=app&code_verifier=v&state=s', '/oidc/authorize?client_id=app&code_verifier=%5Bredacted%5D&state=s'],
    // Nothing to redact: the URL as the client sent it.
    ['/profiles?id=~A_B1', '/profiles?id=~A_B1'],
    ['/tildeusername?first=Ada&last=Lovelace', '/tildeusername?first=Ada&last=Lovelace'],
    // Percent-encoding may spell a secret's name: taken apart and redacted.
    ['/%61ctivate/abc', '/%61ctivate/[redacted]'],
    ['/oidc/authorize?client_id=app&%63ode=c', '/oidc/authorize?client_id=app&code=%5Bredacted%5D'],
    ['/notes?id=1&emai%6C=a%40b.org', '/notes?id=1&email=%5Bredacted%5D'],
    ['/x?my%20token=1', '/x?my+token=%5Bredacted%5D'],
    // Each secret parameter redacted, however often sent, with or without a value; the others as sent.
    ['/x?state=a+b%7E&code=1&code=2&code', '/x?state=a+b%7E&code=%5Bredacted%5D&code=%5Bredacted%5D&code=%5Bredacted%5D'],
    // A URL in a parameter (where a sign-in returns to) has its own secrets redacted; without any, it is as sent.
    ['/account/login?next=%2Faccount%2Fdevice%3Fuser_code%3DQQQQ-ZZZZ&notice=sign-in-first', '/account/login?next=%2Faccount%2Fdevice%3Fuser_code%3D%255Bredacted%255D&notice=sign-in-first'],
    ['/account/login?next=%2Faccount%2Freset%2Fabc%3Fx%3D1', '/account/login?next=%2Faccount%2Freset%2F%5Bredacted%5D%3Fx%3D1'],
    ['/account/login?next=%2Faccount%2Fprofile%3Ftab%3Dnames', '/account/login?next=%2Faccount%2Fprofile%3Ftab%3Dnames'],
    ['/account/login?next=%2Factivate%2Fsecret-token', '/account/login?next=%2Factivate%2F%5Bredacted%5D'],
    ['/account/login?next=https%3A%2F%2Fapp.example%2Fcb%23access_token%3Dabc', '/account/login?next=https%3A%2F%2Fapp.example%2Fcb%23%5Bredacted%5D'],
  ])('%s → %s', (url, expected) => {
    expect(redactUrl(url)).toBe(expected);
  });
});

describe('redactUrl and the route table', () => {
  it('redacts every path parameter that is a one-time token, whatever its letter case', () => {
    const tokenRoutes = routes.filter((route) => /:token\b/.test(route.path));
    expect(tokenRoutes.length).toBeGreaterThan(4);
    for (const route of tokenRoutes) {
      for (const path of [route.path, route.path.toUpperCase().replace(':TOKEN', ':token')]) {
        const url = path.replace(':token', 'secret-value-123');
        expect(redactUrl(url), url).not.toContain('secret-value-123');
        expect(redactUrl(`${url}/`), url).not.toContain('secret-value-123');
      }
    }
  });
});
