import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
let cookieClient: Client;
let token: string;

beforeAll(async () => {
  server = await startServer({ WEB_URL: 'https://app.example.org' });
  const user = await createActiveUser(server);
  ({ client: cookieClient, token } = await loggedIn(server, user.email));
});
afterAll(async () => {
  await server.close();
});

describe('writes authenticated by cookie', () => {
  it('are refused from another site', async () => {
    const bySite = await cookieClient.post('/logout-all-devices', undefined, { 'sec-fetch-site': 'cross-site' });
    expect(bySite.status).toBe(403);
    expect(bySite.body).toEqual({ status: 403, name: 'ForbiddenError', message: 'Cross-site requests cannot use your session', details: { reqId: expect.any(String) } });
    const byOrigin = await cookieClient.post('/logout-all-devices', undefined, { origin: 'https://evil.example.com' });
    expect(byOrigin.status).toBe(403);
    expect((await cookieClient.get('/profiles')).status).toBe(200);
  });

  it('are accepted from the service itself and from the web application', async () => {
    expect((await cookieClient.post('/refreshToken', undefined, { origin: server.url, 'sec-fetch-site': 'same-origin' })).status).toBe(200);
    expect((await cookieClient.post('/refreshToken', undefined, { origin: 'https://app.example.org', 'sec-fetch-site': 'same-site' })).status).toBe(200);
  });

  it('must send JSON, never a form body another site could post', async () => {
    const res = await cookieClient.request('POST', '/user/confirm', 'alternate=x%40example.org', {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 400, name: 'BadRequestError', message: 'The body must be JSON (or multipart for uploads)', details: { reqId: expect.any(String) } });
    const plain = await cookieClient.request('POST', '/user/confirm', '{"alternate":"x@example.org"}', { 'content-type': 'text/plain' });
    expect(plain.status).toBe(400);
  });

  it('do not apply to bearer tokens, which no other site can send for the user', async () => {
    const client = new Client(server.url);
    client.bearer = token;
    expect((await client.get('/profiles', { origin: 'https://tool.example.net' })).status).toBe(200);
    expect((await client.post('/refreshToken', undefined, { origin: 'https://tool.example.net', 'sec-fetch-site': 'cross-site' })).status).toBe(200);
  });
});

describe('method override headers', () => {
  it('are refused, so a POST cannot become a PUT', async () => {
    for (const header of ['x-http-method-override', 'x-http-method', 'x-method-override']) {
      const res = await new Client(server.url).post('/login', { id: 'a@b.org', password: 'x' }, { [header]: 'PUT' });
      expect(res.status).toBe(400);
      expect(res.body.message).toBe('Method override headers are not accepted');
    }
  });
});
