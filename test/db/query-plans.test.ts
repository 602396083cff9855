/**
 * Statements on a hot path whose cost must not grow with what accumulates: checked through
 * SQLite's query plan (`EXPLAIN QUERY PLAN`) of the statement the repository really sends,
 * caught from Knex's `query` event. PostgreSQL's planner chooses by its statistics, so its
 * plans are not asserted; the same indexes exist there.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase, type Db } from '../../db/knex.ts';
import { SessionsRepository } from '../../server/accounts/repository/sessions.ts';
import { RefreshRepository } from '../../server/oidc/refresh-repository.ts';
import { OidcRepository } from '../../server/oidc/repository.ts';
import { statementsSent } from '../helpers/database.ts';
import { tempDir } from '../helpers/server.ts';

/** One migrated database for the file: plans are only read, nothing is written. */
let dir: string;
let db: Db;
beforeAll(async () => {
  dir = await tempDir();
  db = openDatabase({ dataDir: dir });
  await migrateToLatest(db);
});
afterAll(async () => {
  await db.destroy();
  await rm(dir, { recursive: true, force: true });
});

/** The plan's lines for the statements `work` sends (one statement expected). */
async function planOf(work: () => Promise<unknown>): Promise<string[]> {
  const sent = await statementsSent(db, work);
  const [statement, ...more] = sent;
  if (!statement || more.length > 0) throw new Error(`expected one statement, got ${sent.length}`);
  const rows = (await db.raw(`explain query plan ${statement.sql}`, statement.bindings as never)) as Array<{ detail: string }>;
  return rows.map((row) => row.detail);
}

describe('query plans on hot paths', () => {
  it("codes' tokens, issued together, seek each code's consent by its key", async () => {
    const code = (n: number) => ({
      codeHash: String(n).repeat(64).slice(0, 64), clientId: 'app', profileId: `~A_B${n}`, redirectUriHash: '', codeChallenge: null, scopes: ['openid' as const],
      nonce: null, authTime: 1, tokenVersion: 0, sid: null, consentedAt: 1, issuedAt: 1, expiresAt: 2,
    });
    const plan = await planOf(() => new OidcRepository(db).issueTokensOfCodes([1, 2, 3].map((n) => ({ code: code(n), tokenHash: String(n).repeat(64), now: 1, expiresAt: 2, familyId: null }))));
    expect(plan).toContainEqual(expect.stringMatching(/^SEARCH c USING INDEX \w+ \(profile_id=\? AND client_id=\?\)$/));
    // The codes' own rows are read in turn; no table is.
    expect(plan.filter((line) => line.startsWith('SCAN') && !/^SCAN (v|\d+ CONSTANT ROWS)$/.test(line))).toEqual([]);
  });

  it("a refresh token's lookup asks whether its family was revoked through revoked tokens only, not through every token the family rotated", async () => {
    const plan = await planOf(() => new RefreshRepository(db).find('a'.repeat(43)));
    expect(plan.some((line) => /SEARCH t USING INDEX .*\(token_hash=\?\)/.test(line))).toBe(true);
    expect(plan.some((line) => line.includes('USING INDEX oidc_refresh_tokens_revoked_family (family_id=?)'))).toBe(true);
  });

  it("a session's refresh rotation is one statement that seeks its row, and the sweep reads only the rotated-out tokens past keeping", async () => {
    const sessions = new SessionsRepository(db);
    const rotation = await planOf(() => sessions.rotateRefresh('s', 'b'.repeat(64), 1, 'a'.repeat(64), 1));
    expect(rotation).toEqual([expect.stringMatching(/^SEARCH sessions USING INDEX \w+ \((id|refresh_hash)=\?\)$/)]);
    const sweep = await planOf(() => sessions.forgetRotatedBefore(1));
    expect(sweep).toContainEqual(expect.stringMatching(/^SEARCH session_refresh_history USING (COVERING )?INDEX session_refresh_history_rotated_at \(rotated_at<\?\)$/));
    expect(sweep.filter((line) => line.startsWith('SCAN'))).toEqual([]);
  });

  it("a refresh's session, profile, emails and usernames are one statement that seeks each by an index", async () => {
    const plan = await planOf(() => new SessionsRepository(db).findWithProfile({ refreshHash: 'a'.repeat(64) }, { withEmails: true }));
    expect(plan).toContainEqual(expect.stringMatching(/^SEARCH sessions USING INDEX \w+ \(refresh_hash=\?\)$/));
    expect(plan).toContainEqual(expect.stringMatching(/^SEARCH profiles USING INDEX \w+ \(id=\?\)( LEFT-JOIN)?$/));
    expect(plan).toContainEqual(expect.stringMatching(/^SEARCH profile_emails USING INDEX \w+ \(profile_id=\?\)$/));
    expect(plan).toContainEqual(expect.stringMatching(/^SEARCH profile_usernames USING INDEX \w+ \(profile_id=\?\)$/));
    expect(plan.filter((line) => line.startsWith('SCAN'))).toEqual([]);
  });

  it("a signed-in request's session, profile and roles are one statement that seeks each row by its key", async () => {
    const plan = await planOf(() => new SessionsRepository(db).findWithProfile({ id: 's' }, { rolesAmong: ['~Super_User1', 'moderators'] }));
    expect(plan).toContainEqual(expect.stringMatching(/^SEARCH sessions USING INDEX \w+ \(id=\?\)$/));
    expect(plan).toContainEqual(expect.stringMatching(/^SEARCH profiles USING INDEX \w+ \(id=\?\)( LEFT-JOIN)?$/));
    expect(plan.filter((line) => line.includes('group_members'))).toEqual([
      expect.stringMatching(/^SEARCH group_members USING (COVERING )?INDEX \w+ \(group_id=\? AND member=\?\)$/),
      expect.stringMatching(/^SEARCH group_members USING (COVERING )?INDEX \w+ \(group_id=\? AND member=\?\)$/),
    ]);
    expect(plan.filter((line) => line.startsWith('SCAN'))).toEqual([]);
  });
});
