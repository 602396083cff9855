/**
 * Found by an independent review of the accounts work. Confirming an address another account
 * holds merges the two, with the six-digit code mailed to that address; wrong codes were counted
 * per token, so asking for fresh tokens (from several accounts) gave fresh guesses, and a merge
 * could be forced by guessing. Wrong codes are limited per address, over all of its tokens.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

describe('confirming an email', () => {
  it('wrong codes for one address are limited over all its tokens, so fresh codes do not help guessing', async () => {
    const victim = await createActiveUser(server);
    const attackers = await Promise.all([1, 2, 3, 4, 5].map(() => createActiveUser(server)));
    let refused = 0;
    for (const attacker of attackers) {
      const { client } = await loggedIn(server, attacker.email);
      await client.post('/user/confirm', { alternate: victim.email });
      for (let i = 0; i < 5; i += 1) {
        const res = await client.request('PUT', '/activatelink', { email: victim.email, token: '000000' });
        if (res.status === 429) refused += 1;
      }
    }
    expect(refused).toBeGreaterThan(0);
  });
});
