/**
 * The back-channel logout queue's SQL (`LogoutRepository`), on a real database: a delivery is
 * leased by one process at a time, and never once it is done.
 */
import { rm } from 'node:fs/promises';
import type { Knex } from 'knex';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrateToLatest, type Db } from '../../db/knex.ts';
import { LogoutRepository } from '../../server/oidc/logout-repository.ts';
import { openTestDatabase } from '../helpers/database.ts';
import { tempDir } from '../helpers/server.ts';

let dir: string;
let db: Db;
const now = Date.UTC(2027, 0, 1);

beforeEach(async () => {
  dir = await tempDir();
  db = await openTestDatabase(dir);
  await migrateToLatest(db);
});
afterEach(async () => {
  await db.destroy();
  await rm(dir, { recursive: true, force: true });
});

/**
 * `db`, with `between` run after the first statement's answer and before the caller sees it: what
 * another process does between a `leaseDue`'s SELECT and its UPDATEs.
 */
function afterFirstStatement(between: () => Promise<void>): Knex {
  let first = true;
  return new Proxy(db, {
    apply(target, thisArg, args: [string]) {
      const builder = Reflect.apply(target, thisArg, args) as Knex.QueryBuilder;
      if (!first) return builder;
      first = false;
      const then = builder.then.bind(builder);
      Object.assign(builder, {
        then: (onFulfilled: (rows: unknown) => unknown, onRejected: (error: unknown) => unknown) =>
          then(async (rows: unknown) => {
            await between();
            return rows;
          }).then(onFulfilled, onRejected),
      });
      return builder;
    },
  });
}

describe('leasing due logout deliveries', () => {
  it('does not lease a delivery another process delivered between the SELECT and the UPDATE', async () => {
    const other = new LogoutRepository(db);
    await other.queue('app', { uri: 'https://app.example/logout', logoutToken: 'token' }, now);
    const [row] = await db('oidc_logout_deliveries').select('id');
    // The other process sent it and records it delivered, which clears its lease.
    const here = new LogoutRepository(afterFirstStatement(() => other.delivered(Number(row?.id), now + 1)));
    expect(await here.leaseDue(now + 2, now + 30_000, 10)).toEqual([]);
    expect(await db('oidc_logout_deliveries').first('leased_until', 'delivered_at')).toMatchObject({ leased_until: null, delivered_at: expect.anything() });
  });

  it('does not lease a delivery another process failed, and put off, between the SELECT and the UPDATE', async () => {
    const other = new LogoutRepository(db);
    await other.queue('app', { uri: 'https://app.example/logout', logoutToken: 'token' }, now);
    const [row] = await db('oidc_logout_deliveries').select('id');
    const here = new LogoutRepository(afterFirstStatement(() => other.failed(Number(row?.id), 'answered 500', now + 2_000, now + 1)));
    expect(await here.leaseDue(now + 2, now + 30_000, 10)).toEqual([]);
    // Once due again, it is leased.
    expect(await new LogoutRepository(db).leaseDue(now + 2_000, now + 32_000, 10)).toMatchObject([{ id: Number(row?.id), attempts: 1 }]);
  });
});
