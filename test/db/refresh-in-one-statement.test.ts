/**
 * A refresh of a live session is one statement (`SessionsRepository.rotateLive`): its conditions
 * are THE RULE (`canHoldSession`) and `resumeSession`'s own, written in SQL. Every case the rule
 * and the session's row can make is tried here, and the statement must rotate exactly when the
 * rule in JavaScript would, writing nothing otherwise. What it answers must be what
 * `findWithProfile` reads of the rotated session. Runs on SQLite, and on PostgreSQL in the
 * suite's PostgreSQL run.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, type Db } from '../../db/knex.ts';
import { AccountsRepository } from '../../server/accounts/repository.ts';
import { canHoldSession } from '../../server/accounts/session-rule.ts';
import { ProfileState } from '../../shared/schemas/profile.ts';
import { dropTestDatabase, openTestDatabase } from '../helpers/database.ts';
import { tempDir } from '../helpers/server.ts';

let dir: string;
let db: Db;
let repo: AccountsRepository;
const now = Date.UTC(2026, 10, 28);
const MIN_REFRESH_SECONDS = 14 * 24 * 60 * 60;

beforeAll(async () => {
  dir = await tempDir();
  db = await openTestDatabase(dir);
  await migrateToLatest(db);
  repo = new AccountsRepository(db);
  await repo.profiles.insert({ id: '~Someone_Else1', state: 'Active', passwordHash: null, content: { names: [{ fullname: 'Someone Else', first: 'Someone', last: 'Else' }] }, pastStates: [], now });
});
afterAll(async () => {
  await db.destroy();
  await dropTestDatabase(dir);
  await rm(dir, { recursive: true, force: true });
});

interface Case {
  state: ProfileState;
  deleted: boolean;
  /** The session's token version against its profile's (1): behind it (0), the same (1) or ahead (2). */
  sessionVersion: 0 | 1 | 2;
  /** The profile names another it was merged into (which the rule does not read today). */
  mergedInto: boolean;
  revoked: boolean;
  expired: boolean;
  parent: boolean;
}

let serial = 0;

/** A profile and a session as `c` describes them; answers the session's id and its refresh hash. */
async function arrange(c: Case): Promise<{ id: string; profileId: string; hash: string }> {
  serial += 1;
  const profileId = `~Case_Person${serial}`;
  await repo.profiles.insert({ id: profileId, state: c.state, passwordHash: null, content: { names: [{ fullname: 'Case Person', first: 'Case', last: 'Person' }] }, pastStates: [], now });
  await repo.emails.addEmail(profileId, `case${serial}@example.org`, true, now);
  await db('profiles').where({ id: profileId }).update({ token_version: 1, ...(c.deleted ? { ddate: now - 1 } : {}), ...(c.mergedInto ? { merged_into: '~Someone_Else1' } : {}) });
  const id = `session-${serial}`;
  const hash = `hash-of-${id}`;
  let parentSessionId: string | undefined;
  if (c.parent) {
    parentSessionId = `parent-of-${id}`;
    await repo.sessions.insert({ id: parentSessionId, profileId, loginEmail: `case${serial}@example.org`, refreshHash: `hash-of-${parentSessionId}`, tokenVersion: 1, accessSeconds: 60, now, expiresAt: now + 60_000 });
  }
  await repo.sessions.insert({
    id,
    profileId,
    loginEmail: `case${serial}@example.org`,
    refreshHash: hash,
    tokenVersion: c.sessionVersion,
    accessSeconds: 3600,
    now,
    expiresAt: c.expired ? now : now + 60_000,
    ...(parentSessionId ? { parentSessionId } : {}),
  });
  if (c.revoked) await repo.sessions.revoke(id, now - 1);
  return { id, profileId, hash };
}

const LIVE: Case = { state: 'Active', deleted: false, sessionVersion: 1, mergedInto: false, revoked: false, expired: false, parent: false };

function* cases(): Generator<Case> {
  for (const state of ProfileState.options) {
    for (const deleted of [false, true]) {
      for (const sessionVersion of [0, 1, 2] as const) {
        for (const mergedInto of [false, true]) yield { ...LIVE, state, deleted, sessionVersion, mergedInto };
      }
    }
  }
  // The session's own conditions, on a profile that may hold one.
  yield { ...LIVE, revoked: true };
  yield { ...LIVE, expired: true };
  yield { ...LIVE, parent: true };
}

describe('a refresh in one statement', () => {
  it('rotates exactly when the rule and the session allow it, and writes nothing otherwise', async () => {
    let rotatedCases = 0;
    let refusedCases = 0;
    for (const c of cases()) {
      const { id, profileId, hash } = await arrange(c);
      const before = await db('sessions').where({ id }).first();
      const profile = await repo.profiles.find(profileId);
      const allowed = canHoldSession(profile, c.sessionVersion) && !c.revoked && !c.expired && !c.parent;
      const done = await repo.sessions.rotateLive(hash, `next-${hash}`, MIN_REFRESH_SECONDS, now);
      const history = await db('session_refresh_history').where({ refresh_hash: hash });
      if (allowed) {
        rotatedCases += 1;
        expect(done?.session.id, JSON.stringify(c)).toBe(id);
        expect(history).toHaveLength(1);
      } else {
        refusedCases += 1;
        expect(done, JSON.stringify(c)).toBeNull();
        expect(await db('sessions').where({ id }).first(), JSON.stringify(c)).toEqual(before);
        expect(history).toEqual([]);
      }
    }
    // Both outcomes were tried, several times each.
    expect(rotatedCases).toBeGreaterThan(7);
    expect(refusedCases).toBeGreaterThan(100);
  });

  it('answers the rotated session with its profile, emails and usernames, as findWithProfile reads them', async () => {
    const { id, profileId, hash } = await arrange(LIVE);
    await repo.emails.addEmail(profileId, 'second@example.org', false, now + 1);
    await repo.emails.addUsername(profileId, '~Case_Person', 7);
    const done = await repo.sessions.rotateLive(hash, 'the-next-hash', MIN_REFRESH_SECONDS, now + 5);
    const read = await repo.sessions.findWithProfile({ refreshHash: 'the-next-hash' }, { withEmails: true });
    expect(done).not.toBeNull();
    expect(done).toEqual({ session: read?.session, profile: read?.profile, emails: read?.emails });
    expect(done?.emails.emails.map((e) => e.email)).toContain('second@example.org');
    expect(done?.session).toMatchObject({ id, lastSeenAt: now + 5 });
    // The token rotated out is recorded with its successor, at the rotation's time.
    expect(await repo.sessions.findRotatedRefresh(hash)).toEqual({ sessionId: id, nextHash: 'the-next-hash', rotatedAt: now + 5 });
    // Presented again, it rotates nothing.
    expect(await repo.sessions.rotateLive(hash, 'another-hash', MIN_REFRESH_SECONDS, now + 6)).toBeNull();
    expect(await repo.sessions.rotateLive('hash-nobody-has', 'another-hash', MIN_REFRESH_SECONDS, now + 6)).toBeNull();
  });

  it('gives the refresh token the configured lifetime, or the access token’s when that is longer', async () => {
    const short = await arrange(LIVE);
    const rotated = await repo.sessions.rotateLive(short.hash, `${short.hash}-2`, MIN_REFRESH_SECONDS, now);
    expect(rotated?.session.expiresAt).toBe(now + MIN_REFRESH_SECONDS * 1000);
    // An access lifetime of an hour against a refresh lifetime of a minute: the hour wins.
    const long = await arrange(LIVE);
    const longer = await repo.sessions.rotateLive(long.hash, `${long.hash}-2`, 60, now);
    expect(longer?.session.expiresAt).toBe(now + 3600 * 1000);
    expect(Number((await db('sessions').where({ id: long.id }).first()).expires_at)).toBe(now + 3600 * 1000);
    // A lifetime past a 32-bit integer's seconds (the setting has no upper bound) is no error.
    const century = await arrange(LIVE);
    const far = await repo.sessions.rotateLive(century.hash, `${century.hash}-2`, 3_000_000_000, now);
    expect(far?.session.expiresAt).toBe(now + 3_000_000_000_000);
  });
});
