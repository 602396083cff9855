/**
 * Found by an independent review of the account pages. `GET /oidc/logout` without an
 * `id_token_hint` asks the person first, but not in an impersonation: any link or page could
 * end a support user's impersonation (and clear the browser's cookies) with a navigation. An
 * impersonation is asked too; only a hint naming the person of a usable session ends it at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cookieHeader } from '../helpers/cookies.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

describe('GET /oidc/logout in an impersonation', () => {
  it('asks first, and ends nothing until asked', async () => {
    const root = await createActiveUser(server, { role: 'superuser', fullname: 'Support Person' });
    const target = await createActiveUser(server, { fullname: 'Helped Person' });
    const { client } = await loggedIn(server, root.email);
    expect((await client.post('/impersonate', { groupId: target.id })).status).toBe(200);
    const page = await fetch(`${server.url}/oidc/logout`, { headers: { cookie: cookieHeader(client.jar) }, redirect: 'manual' });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('>Sign out</button>');
    // The question's CSRF cookie only: no session cookie cleared.
    expect(page.headers.getSetCookie().map((c) => c.split('=')[0])).toEqual(['service.oidc-csrf']);
    // Still impersonating.
    const me = await client.get('/profiles');
    expect(me.status).toBe(200);
    expect(JSON.stringify(me.body)).toContain(target.id);
  });
});
