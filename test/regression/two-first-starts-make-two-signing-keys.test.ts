/**
 * Issue 15: `KeyStore.ensureKey` read the keys and, finding none, generated one and inserted it.
 * Two servers starting together on a new database both found none, and both added a key in
 * service: two signing keys, each process signing with whichever it read first. The key is now
 * added under the install-wide `oidc-keys` lock, only if there is still none.
 */
import { rm } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrateToLatest, type Db } from '../../db/knex.ts';
import { KeyStore } from '../../server/oidc/keys.ts';
import { OidcRepository } from '../../server/oidc/repository.ts';
import { dropTestDatabase, openTestDatabase } from '../helpers/database.ts';
import { tempDir } from '../helpers/server.ts';

let dir: string;
let dbs: Db[];

beforeEach(async () => {
  dir = await tempDir();
  // One database, opened by three processes (each its own connection or pool).
  dbs = await Promise.all([openTestDatabase(dir), openTestDatabase(dir), openTestDatabase(dir)]);
  await migrateToLatest(dbs[0]!);
});
afterEach(async () => {
  await Promise.all(dbs.map((db) => db.destroy()));
  await rm(dir, { recursive: true, force: true });
  await dropTestDatabase(dir);
});

describe('the first signing key', () => {
  it('is made once when three servers start together on a new database, and all three sign with it', async () => {
    const stores = dbs.map((db) => new KeyStore(new OidcRepository(db), 300));
    await Promise.all(stores.map((store) => store.ensureKey()));

    expect(await dbs[0]!('oidc_keys').count({ n: '*' })).toEqual([{ n: 1 }]);
    const kids = await Promise.all(stores.map(async (store) => (await store.signer()).kid));
    expect(new Set(kids).size).toBe(1);
    expect((await stores[0]!.jwks()).keys.map((k) => k.kid)).toEqual([kids[0]]);
  });

  it('is not added beside a key rotated in while a server starts', async () => {
    const [admin, server] = dbs.map((db) => new KeyStore(new OidcRepository(db), 300));
    await admin!.ensureKey();
    await Promise.all([admin!.rotate(), server!.ensureKey()]);
    // The first key (retiring) and the one rotated in: one key in service.
    expect(await dbs[0]!('oidc_keys').whereNull('retired_at').count({ n: '*' })).toEqual([{ n: 1 }]);
    expect(await dbs[0]!('oidc_keys').count({ n: '*' })).toEqual([{ n: 2 }]);
  });
});
