/**
 * The failure: a write that lost a race no check saw (the same key written by two requests at
 * once, a row it names deleted meanwhile) reached the error handler as the driver's constraint
 * error, and was a 500. Nothing was written: it is a 409 saying to try again. The errors here are
 * the real driver's, on whichever database the suite runs (SQLite, or PostgreSQL with
 * `DATABASE_URL`); a constraint that only a bug breaks (`NOT NULL`) stays a 500.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toAppError, toTRPCError } from '../../server/errors.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

/** What the driver throws for `write`. */
async function thrown(write: () => Promise<unknown>): Promise<unknown> {
  try {
    await write();
  } catch (error) {
    return error;
  }
  throw new Error('the write was not refused');
}

describe('a write refused by a key', () => {
  it('a unique key or a foreign key: 409, and the answer says to try again', async () => {
    const user = await createActiveUser(server);
    const db = server.service.db;
    const unique = await thrown(() => db('profile_emails').insert({ email: user.email, profile_id: user.id, confirmed: true, created_at: Date.now() }));
    const foreign = await thrown(() => db('profile_emails').insert({ email: `x-${user.email}`, profile_id: '~Nobody_There1', confirmed: true, created_at: Date.now() }));
    for (const cause of [unique, foreign]) {
      const error = toAppError(cause, undefined);
      expect([error.status, error.name, error.message], String(cause)).toEqual([409, 'ConflictError', 'This conflicts with a change made at the same time. Please try again.']);
      // A tRPC client is told the same: CONFLICT, tRPC's name for 409.
      expect(toTRPCError(error).code).toBe('CONFLICT');
    }
  });

  it('a NOT NULL column left empty is a bug: a 500', async () => {
    const cause = await thrown(() => server.service.db('profile_emails').insert({ email: 'nobody@example.org', profile_id: null, confirmed: true, created_at: Date.now() }));
    expect(toAppError(cause, undefined).status).toBe(500);
  });
});
