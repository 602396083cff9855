import { rm } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrateToLatest, type Db } from '../../db/knex.ts';
import { KeyStore } from '../../server/oidc/keys.ts';
import { OidcRepository } from '../../server/oidc/repository.ts';
import { openTestDatabase } from '../helpers/database.ts';
import { tempDir } from '../helpers/server.ts';

let dir: string;
let db: Db;
let now: number;
const clock = () => now;

beforeEach(async () => {
  dir = await tempDir();
  db = await openTestDatabase(dir);
  await migrateToLatest(db);
  now = Date.UTC(2027, 0, 1);
});
afterEach(async () => {
  await db.destroy();
  await rm(dir, { recursive: true, force: true });
});

describe('the signing key, which the server reads at most once a second', () => {
  it('is, within a second, the key another process rotated in to sign at once; the old one until then', async () => {
    const server = new KeyStore(new OidcRepository(db), 0, clock);
    await server.ensureKey();
    now += 10_000;
    const old = (await server.signer()).kid;
    // The admin command, in a process of its own, with no activation delay.
    const rotated = await new KeyStore(new OidcRepository(db), 0, clock).rotate();
    now += 999;
    expect((await server.signer()).kid).toBe(old);
    now += 1;
    expect((await server.signer()).kid).toBe(rotated);
  });

  it('switches to a key it has already read at the moment that key takes over', async () => {
    const server = new KeyStore(new OidcRepository(db), 0, clock);
    await server.ensureKey();
    now += 10_000;
    // Published now, signing half a second from now.
    const rotated = await new KeyStore(new OidcRepository(db), 0.5, clock).rotate();
    const old = (await server.signer()).kid;
    expect(old).not.toBe(rotated);
    now += 499;
    expect((await server.signer()).kid).toBe(old);
    now += 1;
    expect((await server.signer()).kid).toBe(rotated);
  });

  it('serves the key set from memory, read once for requests arriving together, and a rotation by another process within a second', async () => {
    const server = new KeyStore(new OidcRepository(db), 0, clock);
    await server.ensureKey();
    let statements = 0;
    const count = () => {
      statements += 1;
    };
    db.on('query', count);
    const together = await Promise.all(Array.from({ length: 10 }, () => server.jwksBody()));
    expect(statements).toBe(1);
    const before = together[0];
    expect(together.every((body) => body === before)).toBe(true);
    const rotated = await new KeyStore(new OidcRepository(db), 0, clock).rotate();
    now += 999;
    expect(await server.jwksBody()).toBe(before);
    now += 1;
    const after = await server.jwksBody();
    expect((JSON.parse(after.body) as { keys: Array<{ kid: string }> }).keys.map((k) => k.kid)).toContain(rotated);
    expect(after.etag).not.toBe(before?.etag);
    db.off('query', count);
  });
});

describe('a retired key', () => {
  const kids = async (store: KeyStore) => (await store.jwks()).keys.map((k) => k.kid);

  it('stays published while a logout token it signed may still be delivered (two days), not only the hour of an ID token', async () => {
    const server = new KeyStore(new OidcRepository(db), 0, clock);
    await server.ensureKey();
    now += 10_000;
    // A logout token is signed with it and queued; the key is then rotated out at once.
    const old = (await server.signer()).kid;
    const rotated = await server.rotate();
    // A delivery retried for a day: the relying party must still find the key.
    now += 25 * 3600 * 1000;
    expect(await kids(server)).toEqual([rotated, old]);
    now += 23 * 3600 * 1000 - 1_000;
    expect(await kids(server)).toEqual([rotated, old]);
    now += 2_000;
    expect(await kids(server)).toEqual([rotated]);
  });
});
