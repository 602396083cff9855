import type { Knex } from 'knex';
import { CompiledQuery } from '../../../db/compiled.ts';
import { fromJson as json, numberOrNull } from '../../../db/json.ts';
import { rawRows } from '../../../db/knex.ts';
import { isPostgres } from '../../../db/postgres.ts';
import type { Impersonator } from '../../../shared/index.ts';
import { ACTIVE_STATES } from '../session-rule.ts';
import { emailsAndUsernamesColumns, emailsAndUsernamesIn, emailsAndUsernamesSql, type EmailsAndUsernames } from './emails.ts';
import { JOINED_PROFILE, joinedProfile, profileAsJsonSqlite, profileFromJson, type ProfileRecord } from './profiles.ts';

export interface SessionRecord {
  id: string;
  profileId: string;
  loginEmail: string;
  tokenVersion: number;
  accessSeconds: number;
  /** When the person signed in (the session's start): an OIDC `auth_time`. */
  createdAt: number;
  expiresAt: number;
  revokedAt: number | null;
  /** On an impersonation session: who is acting (the spec's Impersonator). */
  impersonator: Impersonator | null;
  /** On an impersonation session: the impersonator's own session, to return to. */
  parentSessionId: string | null;
  /** On an impersonation session by anyone but a super user: no data may be changed. */
  readOnly: boolean;
  /** The browser's User-Agent and address at sign-in, as sent (null on sessions older than them). */
  userAgent: string | null;
  address: string | null;
  /** The last sign-in or refresh of the session (null on sessions older than the column). */
  lastSeenAt: number | null;
}

interface SessionRow {
  id: string;
  profile_id: string;
  login_email: string;
  refresh_hash: string;
  token_version: number;
  access_seconds: number;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
  impersonator: string | null;
  parent_session_id: string | null;
  read_only: unknown;
  user_agent?: string | null;
  address?: string | null;
  last_seen_at?: number | string | null;
}

function toSession(row: SessionRow): SessionRecord {
  return {
    id: row.id,
    profileId: row.profile_id,
    loginEmail: row.login_email,
    tokenVersion: Number(row.token_version),
    accessSeconds: Number(row.access_seconds),
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
    impersonator: row.impersonator === null ? null : json<Impersonator>(row.impersonator),
    parentSessionId: row.parent_session_id,
    readOnly: Boolean(row.read_only),
    userAgent: row.user_agent ?? null,
    address: row.address ?? null,
    lastSeenAt: numberOrNull(row.last_seen_at),
  };
}

/** The session statements every signed-in request or refresh sends, compiled once (`db/compiled.ts`). */
const withProfileQueries = new Map<string, CompiledQuery<'key'>>();

/** The session by id or by refresh-token hash with its profile and, for each of `groups`, whether the profile is a direct member. */
function sessionWithProfile(by: 'id' | 'refreshHash', groups: readonly string[], withEmails: boolean): CompiledQuery<'key'> {
  const name = JSON.stringify([by, groups, withEmails]);
  let query = withProfileQueries.get(name);
  if (!query) {
    query = new CompiledQuery(['key'], (db, param) =>
      db('sessions')
        .leftJoin('profiles', 'profiles.id', 'sessions.profile_id')
        .where(by === 'id' ? { 'sessions.id': param.key } : { 'sessions.refresh_hash': param.key })
        .first(
          'sessions.*',
          ...JOINED_PROFILE,
          // One `exists` per group: a primary-key lookup each, answered 0 or 1.
          ...groups.map((group, i) => db.raw(`exists (select 1 from group_members where group_members.group_id = ? and group_members.member = profiles.id) as role_${i}`, [group])),
          ...(withEmails ? emailsAndUsernamesColumns(db) : []),
        ),
    );
    withProfileQueries.set(name, query);
  }
  return query;
}

const rotated = (param: Record<'newHash' | 'expiresAt' | 'now', string>) => ({ refresh_hash: param.newHash, expires_at: param.expiresAt, last_seen_at: param.now });
const ROTATE_REFRESH = new CompiledQuery(['id', 'newHash', 'expiresAt', 'now'], (db, param) =>
  db('sessions').where({ id: param.id }).whereNull('revoked_at').update(rotated(param), ['id']),
);
const ROTATE_REFRESH_FROM = new CompiledQuery(['id', 'oldHash', 'newHash', 'expiresAt', 'now'], (db, param) =>
  db('sessions').where({ id: param.id, refresh_hash: param.oldHash }).whereNull('revoked_at').update(rotated(param), ['id']),
);

/**
 * `SessionsRepository.rotateLive`'s statement in each dialect. Its conditions are THE RULE
 * (`canHoldSession` in `session-rule.ts`, written again here in SQL and held to it by
 * `test/db/refresh-in-one-statement.test.ts`: the profile exists, is not deleted, is in one of
 * `ACTIVE_STATES`, and still has the session's token version) and `resumeSession`'s own (the
 * session not ended, not expired, its refresh token the one presented), for a session with no
 * parent: an impersonation, whose parent sessions must be live too, is left to the full path.
 * Bindings: the new hash, now, the shortest refresh lifetime in seconds, now; the presented hash,
 * now, then the states.
 */
const STATE_MARKS = [...ACTIVE_STATES].map(() => '?').join(', ');
const ROTATE_LIVE = {
  sqlite: `update sessions set refresh_hash = ?, expires_at = ? + max(?, access_seconds) * 1000, last_seen_at = ?
    where refresh_hash = ? and revoked_at is null and expires_at > ? and parent_session_id is null
      and exists (select 1 from profiles where profiles.id = sessions.profile_id and profiles.ddate is null
        and profiles.state in (${STATE_MARKS}) and profiles.token_version = sessions.token_version)
    returning *, ${profileAsJsonSqlite('sessions.profile_id')} as p_json, ${emailsAndUsernamesSql(false, 'sessions.profile_id').join(', ')}`,
  postgres: `update sessions set refresh_hash = ?, expires_at = ?::bigint + greatest(?::bigint, sessions.access_seconds) * 1000, last_seen_at = ?
    from profiles
    where sessions.refresh_hash = ? and sessions.revoked_at is null and sessions.expires_at > ? and sessions.parent_session_id is null
      and profiles.id = sessions.profile_id and profiles.ddate is null
      and profiles.state in (${STATE_MARKS}) and profiles.token_version = sessions.token_version
    returning sessions.*, ${JOINED_PROFILE.join(', ')}, ${emailsAndUsernamesSql(true, 'profiles.id').join(', ')}`,
};

/** SQL for `sessions` and `session_refresh_history` (the refresh tokens rotated out). Given its Knex (or a transaction). */
export class SessionsRepository {
  readonly #db: Knex;

  constructor(db: Knex) {
    this.#db = db;
  }

  async insert(session: {
    id: string;
    profileId: string;
    loginEmail: string;
    refreshHash: string;
    tokenVersion: number;
    accessSeconds: number;
    now: number;
    expiresAt: number;
    impersonator?: Impersonator;
    parentSessionId?: string;
    readOnly?: boolean;
    /** Where the browser signed in from: its User-Agent (at most 512 characters kept) and address. */
    device?: { userAgent?: string | undefined; address: string } | undefined;
  }): Promise<void> {
    await this.#db('sessions').insert({
      impersonator: session.impersonator ? JSON.stringify(session.impersonator) : null,
      parent_session_id: session.parentSessionId ?? null,
      read_only: session.readOnly ?? false,
      id: session.id,
      profile_id: session.profileId,
      login_email: session.loginEmail,
      refresh_hash: session.refreshHash,
      token_version: session.tokenVersion,
      access_seconds: session.accessSeconds,
      created_at: session.now,
      expires_at: session.expiresAt,
      last_seen_at: session.now,
      user_agent: session.device?.userAgent?.slice(0, 512) ?? null,
      address: session.device?.address ?? null,
    });
  }

  async find(id: string): Promise<SessionRecord | null> {
    const row = await this.#db<SessionRow>('sessions').where({ id }).first();
    return row ? toSession(row) : null;
  }

  async findByRefreshHash(refreshHash: string): Promise<SessionRecord | null> {
    const row = await this.#db<SessionRow>('sessions').where({ refresh_hash: refreshHash }).first();
    return row ? toSession(row) : null;
  }

  /**
   * A session and its profile (null when the profile is gone) in one query, by session id or by
   * refresh-token hash: every signed-in request and every refresh needs both. With `rolesAmong`,
   * it also answers which of those groups have the profile as a direct member (`roles`; empty
   * without): on SQLite in the same statement, so a signed-in request's caller and roles take one
   * round trip on the one connection; on PostgreSQL in a second statement, as planning the
   * `EXISTS` columns (each statement is planned anew) costs more there than the round trip
   * (measured: docs/performance.md). With `withEmails`, the profile's emails and usernames come
   * in the same statement (`emails`; `EmailsRepository.emailsAndUsernamesOf`'s answer), for a
   * refresh's answer.
   */
  async findWithProfile(
    by: { id: string } | { refreshHash: string },
    opts: { rolesAmong?: readonly string[]; withEmails?: boolean } = {},
  ): Promise<{ session: SessionRecord; profile: ProfileRecord | null; currentRefreshHash: string; roles: Set<string>; emails?: EmailsAndUsernames } | null> {
    const groups = opts.rolesAmong ?? [];
    const withEmails = opts.withEmails ?? false;
    if (groups.length > 0 && isPostgres(this.#db)) {
      const found = await this.findWithProfile(by, { withEmails });
      if (!found?.profile) return found;
      const rows: Array<{ group_id: string }> = await this.#db('group_members').where({ member: found.profile.id }).whereIn('group_id', groups).select('group_id');
      return { ...found, roles: new Set(rows.map((row) => row.group_id)) };
    }
    const [row] = await sessionWithProfile('id' in by ? 'id' : 'refreshHash', groups, withEmails).rows<SessionRow & Record<string, unknown>>(this.#db, { key: 'id' in by ? by.id : by.refreshHash });
    if (!row) return null;
    const roles = new Set(groups.filter((_, i) => Number(row[`role_${i}`]) === 1));
    const found = { session: toSession(row), profile: joinedProfile(row), currentRefreshHash: row.refresh_hash, roles };
    return withEmails ? { ...found, emails: emailsAndUsernamesIn(row) } : found;
  }

  /**
   * Gives a live session a new refresh token, in one statement. With `oldHash`, only if the
   * session still has that one: when two requests race with the same refresh token, exactly one
   * updates the row. The token rotated out is recorded with the one that replaced it (so that
   * presenting it again is recognised as reuse) by the trigger `session_refresh_rotated`
   * (migration `20261127010000_session_rotation_in_one_statement`), within the same statement:
   * the record exists exactly when the rotation does. Its time is the `last_seen_at` set here.
   */
  async rotateRefresh(id: string, newHash: string, expiresAt: number, oldHash: string | null, now: number): Promise<boolean> {
    const changed = oldHash === null
      ? await ROTATE_REFRESH.rows(this.#db, { id, newHash, expiresAt, now })
      : await ROTATE_REFRESH_FROM.rows(this.#db, { id, oldHash, newHash, expiresAt, now });
    return changed.length === 1;
  }

  /**
   * A refresh in one statement: the session whose current refresh token is `oldHash` is given
   * `newHash`, when it may still be used (see `ROTATE_LIVE`), and comes back with its profile and
   * the profile's emails and usernames, as `findWithProfile` answers them after `rotateRefresh`.
   * Its refresh token then lives `max(minRefreshSeconds, access_seconds)` from `now`, as
   * `SessionService` computes it. The trigger of `rotateRefresh` records the token rotated out.
   * Null when nothing was rotated, for whatever reason: the caller then asks why, through
   * `findWithProfile` and `findRotatedRefresh`, as a refresh always did. On SQLite's one
   * connection, every refresh thus holds it for one statement rather than two.
   */
  async rotateLive(oldHash: string, newHash: string, minRefreshSeconds: number, now: number): Promise<{ session: SessionRecord; profile: ProfileRecord; emails: EmailsAndUsernames } | null> {
    const postgres = isPostgres(this.#db);
    const [row] = rawRows<SessionRow & Record<string, unknown>>(
      await this.#db.raw(postgres ? ROTATE_LIVE.postgres : ROTATE_LIVE.sqlite, [newHash, now, minRefreshSeconds, now, oldHash, now, ...ACTIVE_STATES]),
    );
    if (!row) return null;
    const profile = postgres ? joinedProfile(row) : profileFromJson(row.p_json);
    // The statement rotates only a session whose profile exists; a row without one is a broken statement, not a refusal.
    if (!profile) throw new Error('rotateLive: the rotated session came back without its profile');
    return { session: toSession(row), profile, emails: emailsAndUsernamesIn(row) };
  }

  /**
   * Lets go of the rotated-out refresh tokens recorded before `before` (the sweeper's), a
   * thousand at a time, so that a long backlog never holds SQLite's one connection for long.
   */
  async forgetRotatedBefore(before: number): Promise<void> {
    const BATCH = 1000;
    const batch = () => this.#db('session_refresh_history').where('rotated_at', '<', before).select('refresh_hash').limit(BATCH);
    let deleted: number;
    do deleted = await this.#db('session_refresh_history').whereIn('refresh_hash', batch()).delete();
    while (deleted === BATCH);
  }

  /**
   * A session signed in to again (the same browser signing in as the same person): it takes the
   * new sign-in's time, login email, access lifetime and browser. Its refresh token is rotated
   * by `rotateRefresh` first.
   */
  async signInAgain(id: string, values: { loginEmail: string; accessSeconds: number; now: number; device: { userAgent?: string | undefined; address: string } }): Promise<void> {
    await this.#db('sessions').where({ id }).whereNull('revoked_at').update({
      login_email: values.loginEmail,
      access_seconds: values.accessSeconds,
      created_at: values.now,
      last_seen_at: values.now,
      user_agent: values.device.userAgent?.slice(0, 512) ?? null,
      address: values.device.address,
    });
  }

  /** A refresh token some session has rotated out: which session, what replaced it, and when. */
  async findRotatedRefresh(refreshHash: string): Promise<{ sessionId: string; nextHash: string; rotatedAt: number } | null> {
    const row = await this.#db('session_refresh_history').where({ refresh_hash: refreshHash }).first();
    return row ? { sessionId: row.session_id, nextHash: row.next_hash, rotatedAt: Number(row.rotated_at) } : null;
  }

  async setVersion(id: string, tokenVersion: number): Promise<void> {
    await this.#db('sessions').where({ id }).update({ token_version: tokenVersion });
  }

  /** Ends a live session; false: it had ended already (another request ended it first). */
  async revoke(id: string, now: number): Promise<boolean> {
    return (await this.#db('sessions').where({ id }).whereNull('revoked_at').update({ revoked_at: now })) === 1;
  }

  /** A person's own live sessions (not impersonations of them), the newest first: what the security page lists. */
  async liveOf(profileId: string, now: number): Promise<SessionRecord[]> {
    const rows = await this.#db<SessionRow>('sessions')
      .where({ profile_id: profileId })
      .whereNull('revoked_at')
      .whereNull('impersonator')
      .where('expires_at', '>', now)
      .orderBy('created_at', 'desc')
      .limit(100);
    return rows.map(toSession);
  }

  /** Ends one session of a profile (only if it is that profile's); true when one was ended. */
  async revokeOwn(profileId: string, id: string, now: number): Promise<boolean> {
    return (await this.#db('sessions').where({ id, profile_id: profileId }).whereNull('revoked_at').update({ revoked_at: now })) === 1;
  }

  /** Ends the impersonation sessions opened from any session of a profile. */
  async revokeImpersonationsFrom(profileId: string, now: number): Promise<void> {
    await this.#db('sessions')
      .whereIn('parent_session_id', this.#db('sessions').where({ profile_id: profileId }).select('id'))
      .whereNull('revoked_at')
      .update({ revoked_at: now });
  }

  /** Ends every session of a profile but one (`keep`, which may be null to end them all). */
  async revokeOthers(profileId: string, keep: string | null, now: number): Promise<void> {
    const query = this.#db('sessions').where({ profile_id: profileId }).whereNull('revoked_at');
    if (keep) query.whereNot({ id: keep });
    await query.update({ revoked_at: now });
  }
}
