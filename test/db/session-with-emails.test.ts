/**
 * A refresh reads the session, its profile and the profile's emails and usernames in one
 * statement (`SessionsRepository.findWithProfile` with `withEmails`): the emails and usernames
 * must be exactly what `EmailsRepository.emailsAndUsernamesOf` answers, and what `emailsOf` and
 * `usernamesOf` answer, in their orders. Runs on SQLite, and on PostgreSQL in the suite's
 * PostgreSQL run.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, type Db } from '../../db/knex.ts';
import { AccountsRepository } from '../../server/accounts/repository.ts';
import { dropTestDatabase, openTestDatabase } from '../helpers/database.ts';
import { tempDir } from '../helpers/server.ts';

let dir: string;
let db: Db;
let repo: AccountsRepository;
const now = Date.UTC(2026, 10, 28);

beforeAll(async () => {
  dir = await tempDir();
  db = await openTestDatabase(dir);
  await migrateToLatest(db);
  repo = new AccountsRepository(db);
});
afterAll(async () => {
  await db.destroy();
  await dropTestDatabase(dir);
  await rm(dir, { recursive: true, force: true });
});

async function person(id: string, emails: Array<[string, boolean, number]>, usernames: Array<[string, number]>): Promise<void> {
  await repo.profiles.insert({ id, state: 'Active', passwordHash: null, content: { names: [{ fullname: 'Ada Lovelace', first: 'Ada', last: 'Lovelace' }] }, pastStates: [], now });
  for (const [email, confirmed, at] of emails) await repo.emails.addEmail(id, email, confirmed, at);
  for (const [base, number] of usernames) await repo.emails.addUsername(id, base, number);
}

async function session(id: string, profileId: string): Promise<string> {
  const refreshHash = `hash-of-${id}`;
  await repo.sessions.insert({ id, profileId, loginEmail: `${profileId}@example.org`, refreshHash, tokenVersion: 0, accessSeconds: 60, now, expiresAt: now + 60_000 });
  return refreshHash;
}

describe('a session read with its profile’s emails and usernames', () => {
  it('answers what emailsAndUsernamesOf answers, in its order, confirmed or not', async () => {
    // Added out of order, two at the same instant; usernames that differ only by case (addresses are stored lower-cased).
    await person(
      '~Ada_Lovelace1',
      [
        ['zed@example.org', false, now + 2],
        ['Bob@example.org', true, now + 1],
        ['amy@example.org', true, now + 1],
        ['first@example.org', true, now],
      ],
      [
        ['~Ada_Lovelace', 1],
        ['~Ada_Byron', 2],
        ['~ada_lovelace', 3],
      ],
    );
    const refreshHash = await session('session-with-emails', '~Ada_Lovelace1');
    const expected = await repo.emails.emailsAndUsernamesOf('~Ada_Lovelace1');
    expect(expected.emails).toHaveLength(4);
    expect(expected.usernames).toHaveLength(3);
    // Both read the same columns; the separate readers, each its own query, say what they must be.
    expect(expected).toEqual({ emails: await repo.emails.emailsOf('~Ada_Lovelace1'), usernames: await repo.emails.usernamesOf('~Ada_Lovelace1') });
    const byHash = await repo.sessions.findWithProfile({ refreshHash }, { withEmails: true });
    expect(byHash?.emails).toEqual(expected);
    expect(byHash?.profile?.id).toBe('~Ada_Lovelace1');
    // By id, and beside the roles, too.
    expect((await repo.sessions.findWithProfile({ id: 'session-with-emails' }, { withEmails: true, rolesAmong: ['~Super_User1'] }))?.emails).toEqual(expected);
    // Without asking, none are read.
    expect(await repo.sessions.findWithProfile({ refreshHash })).not.toHaveProperty('emails');
  });

  it('answers empty lists for a profile with none', async () => {
    await person('~No_Address1', [], []);
    const refreshHash = await session('session-without-emails', '~No_Address1');
    expect((await repo.sessions.findWithProfile({ refreshHash }, { withEmails: true }))?.emails).toEqual({ emails: [], usernames: [] });
    expect(await repo.emails.emailsAndUsernamesOf('~No_Address1')).toEqual({ emails: [], usernames: [] });
    expect(await repo.emails.emailsAndUsernamesOf('~No_Such_Person1')).toEqual({ emails: [], usernames: [] });
  });
});
