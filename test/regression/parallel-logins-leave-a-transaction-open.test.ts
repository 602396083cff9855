/**
 * Found by an independent review of the accounts work. Parallel wrong logins could all slip under
 * the login limit (it now counts first and gives back on success). Fourteen at once also showed
 * that rate-limiter-flexible's Knex mode released the shared connection with a savepoint open, so
 * the next transaction failed; the limiter now has a connection of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

describe('login attempts in parallel', () => {
  // Fourteen at once once left a rate limiter's savepoint open on the shared connection, and
  // the next transaction failed with "cannot start a transaction within a transaction".
  it('cannot all slip under the limit, and leave the database usable', async () => {
    const user = await createActiveUser(server);
    const results = await Promise.all(
      Array.from({ length: 14 }, (_, i) => new Client(server.url).post('/login', { id: user.email, password: `Wrong-Guess-${i}` })),
    );
    // At most ten passwords are checked; the rest are refused (by the account's limit, or by the
    // hashing queue's share for one client address).
    expect(results.filter((r) => r.status === 400).length).toBeLessThanOrEqual(10);
    expect(results.filter((r) => r.status === 429).length).toBeGreaterThanOrEqual(4);
    expect(results.every((r) => r.status === 400 || r.status === 429)).toBe(true);
    expect((await new Client(server.url).post('/register', { email: 'after-race@example.org', password: PASSWORD, fullname: 'After Race', token: 'dev-ok' })).status).toBe(200);
  });
});
