/**
 * The failure: an authorization request without a session is stored for its login and consent
 * pages, a row for ten minutes; a review stored 4,000 of them in 11 s as a guest (about 1 MB/s
 * with the longest `state`), with no limit. Now an address stores 1,000 in fifteen minutes (a
 * venue's Wi-Fi, many people signing in together, stays under it); past
 * that the request goes back to the client with `temporarily_unavailable` (RFC 6749 §4.1.2.1),
 * and nothing is stored. A person with a session and a consent, whose request stores nothing,
 * is not counted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { addOfflineClient, REDIRECT } from '../oidc/helpers.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
  await addOfflineClient(server, 'flooded-app');
});
afterAll(async () => {
  await server.close();
});

const authorizeUrl = (state: string) =>
  `${server.url}/oidc/authorize?${new URLSearchParams({ client_id: 'flooded-app', redirect_uri: REDIRECT, response_type: 'code', scope: 'openid', state, code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' })}`;

describe('sign-in requests stored per address', () => {
  it('1,000 in fifteen minutes; then temporarily_unavailable to the client, and nothing stored', async () => {
    for (let i = 0; i < 1000; i += 1) {
      const res = await fetch(authorizeUrl(`s${i}`), { redirect: 'manual' });
      expect(res.status, String(i)).toBe(303);
      expect(res.headers.get('location')).not.toContain(REDIRECT);
    }
    const rows = async () => Number((await server.service.db('oidc_interactions').count({ n: '*' }))[0]?.n);
    const stored = await rows();
    const refused = await fetch(authorizeUrl('past-it'), { redirect: 'manual' });
    expect(refused.status).toBe(303);
    const back = new URL(refused.headers.get('location') ?? '');
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
    expect(Object.fromEntries(back.searchParams)).toMatchObject({ error: 'temporarily_unavailable', state: 'past-it' });
    expect(await rows()).toBe(stored);
  });
});
