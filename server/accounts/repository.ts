import type { Knex } from 'knex';
import { fromJson as json } from '../../db/json.ts';
import type { Impersonator, PastState, ProfileContent, ProfileState } from '../../shared/index.ts';
import { normaliseEmail, normaliseId } from './ids.ts';

/** Rows as they are stored; JSON columns are text, parsed here and nowhere else. */
interface ProfileRow {
  id: string;
  state: string;
  password_hash: string | null;
  token_version: number;
  content: string;
  past_states: string;
  tcdate: number;
  tmdate: number;
  ddate: number | null;
  terms_timestamp: number | null;
  dob_timestamp: number | null;
  last_login: number | null;
  merged_into: string | null;
}

export interface ProfileRecord {
  id: string;
  state: ProfileState;
  passwordHash: string | null;
  tokenVersion: number;
  content: ProfileContent;
  pastStates: PastState[];
  tcdate: number;
  tmdate: number;
  ddate: number | null;
  termsTimestamp: number | null;
  dobTimestamp: number | null;
  lastLogin: number | null;
  mergedInto: string | null;
}

export interface EmailRecord {
  email: string;
  confirmed: boolean;
}

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
}

export interface TokenRecord {
  id: number;
  kind: TokenKind;
  profileId: string;
  email: string | null;
  codeHash: string | null;
  attempts: number;
  createdAt: number;
  expiresAt: number;
  duplicateProfile: string | null;
}

/** The kinds of one-time token. */
export type TokenKind = 'activation' | 'email' | 'reset';

export interface AuditEntry {
  actor: string;
  action: string;
  target: string;
  reason?: string | null | undefined;
  details?: Record<string, unknown> | undefined;
}

export interface GroupRecord {
  id: string;
  data: Record<string, unknown>;
  members: string[];
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
}

interface TokenRow {
  id: number;
  kind: string;
  token_hash: string;
  used_at: number | null;
  profile_id: string;
  email: string | null;
  code_hash: string | null;
  attempts: number;
  created_at: number;
  expires_at: number;
  duplicate_profile: string | null;
}

function toProfile(row: ProfileRow): ProfileRecord {
  return {
    id: row.id,
    state: row.state as ProfileState,
    passwordHash: row.password_hash,
    tokenVersion: Number(row.token_version),
    content: json<ProfileContent>(row.content),
    pastStates: json<PastState[]>(row.past_states),
    tcdate: Number(row.tcdate),
    tmdate: Number(row.tmdate),
    ddate: row.ddate === null ? null : Number(row.ddate),
    termsTimestamp: row.terms_timestamp === null ? null : Number(row.terms_timestamp),
    dobTimestamp: row.dob_timestamp === null ? null : Number(row.dob_timestamp),
    lastLogin: row.last_login === null ? null : Number(row.last_login),
    mergedInto: row.merged_into,
  };
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
  };
}

function toToken(row: TokenRow): TokenRecord {
  return {
    id: row.id,
    kind: row.kind as TokenKind,
    profileId: row.profile_id,
    email: row.email,
    codeHash: row.code_hash,
    attempts: Number(row.attempts),
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    duplicateProfile: row.duplicate_profile,
  };
}

/** The columns of `profiles`, for queries that read a profile alongside another table's row. */
const PROFILE_COLUMNS = [
  'id',
  'state',
  'password_hash',
  'token_version',
  'content',
  'past_states',
  'tcdate',
  'tmdate',
  'ddate',
  'terms_timestamp',
  'dob_timestamp',
  'last_login',
  'merged_into',
] as const satisfies ReadonlyArray<keyof ProfileRow>;

/** How a joined profile's columns are named in the row: `p_<column>`, clear of the other table's. */
const JOINED_PROFILE = PROFILE_COLUMNS.map((column) => `profiles.${column} as p_${column}`);

function joinedProfile(row: Record<string, unknown>): ProfileRecord | null {
  if (row.p_id === null || row.p_id === undefined) return null;
  return toProfile(Object.fromEntries(PROFILE_COLUMNS.map((column) => [column, row[`p_${column}`]])) as unknown as ProfileRow);
}

export { normaliseEmail, normaliseId } from './ids.ts';

/** SQL for profiles, their emails and usernames, groups and sessions. Given its Knex (or a transaction). */
export class AccountsRepository {
  readonly #db: Knex;

  constructor(db: Knex) {
    this.#db = db;
  }

  /** The same repository inside a transaction. */
  with(trx: Knex.Transaction): AccountsRepository {
    return new AccountsRepository(trx);
  }

  transaction<T>(work: (repo: AccountsRepository) => Promise<T>): Promise<T> {
    return this.#db.transaction((trx) => work(this.with(trx)));
  }

  // ---- profiles -------------------------------------------------------------------------------

  async insertProfile(profile: {
    id: string;
    state: ProfileState;
    passwordHash: string | null;
    content: ProfileContent;
    pastStates: PastState[];
    now: number;
  }): Promise<void> {
    await this.#db('profiles').insert({
      id: profile.id,
      state: profile.state,
      password_hash: profile.passwordHash,
      token_version: 0,
      content: JSON.stringify(profile.content),
      past_states: JSON.stringify(profile.pastStates),
      tcdate: profile.now,
      tmdate: profile.now,
    });
  }

  async findProfile(id: string): Promise<ProfileRecord | null> {
    const row = await this.#db<ProfileRow>('profiles').where({ id }).first();
    return row ? toProfile(row) : null;
  }

  /** The profile a tilde username belongs to (any of its usernames, not only its id). */
  async findProfileByUsername(username: string): Promise<ProfileRecord | null> {
    const row = await this.#db<ProfileRow>('profiles')
      .join('profile_usernames', 'profile_usernames.profile_id', 'profiles.id')
      .where('profile_usernames.username', normaliseId(username))
      .first('profiles.*');
    return row ? toProfile(row) : null;
  }

  async findProfileByEmail(email: string): Promise<ProfileRecord | null> {
    const row = await this.#db<ProfileRow>('profiles')
      .join('profile_emails', 'profile_emails.profile_id', 'profiles.id')
      .where('profile_emails.email', normaliseEmail(email))
      .first('profiles.*');
    return row ? toProfile(row) : null;
  }

  /** The profile a person names by a tilde username or an email, as every form lets them. */
  async findProfileByIdOrEmail(id: string): Promise<ProfileRecord | null> {
    const canonical = normaliseId(id);
    return canonical.startsWith('~') ? this.findProfileByUsername(canonical) : this.findProfileByEmail(canonical);
  }

  async listProfiles(): Promise<ProfileRecord[]> {
    const rows = await this.#db<ProfileRow>('profiles').orderBy('tcdate').orderBy('id');
    return rows.map(toProfile);
  }

  /**
   * The profiles holding a username whose base (`~Ada_Lovelace`) is `base`, or starts with it,
   * ignoring case; at most `limit`, by profile id. LIKE's wildcards in `base` are taken literally.
   */
  async profileIdsByUsernameBase(base: string, match: 'exact' | 'prefix', limit: number): Promise<string[]> {
    const pattern = base.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`) + (match === 'prefix' ? '%' : '');
    return this.#db('profile_usernames')
      .whereRaw(`lower(base) like ? escape '\\'`, [pattern])
      .distinct('profile_id')
      .orderBy('profile_id')
      .limit(limit)
      .pluck('profile_id');
  }

  /** Which profile holds each of these addresses (confirmed ones only, when asked). */
  async holdersOfEmails(emails: readonly string[], confirmedOnly: boolean): Promise<Array<{ email: string; profileId: string }>> {
    if (emails.length === 0) return [];
    const q = this.#db('profile_emails').whereIn('email', emails.map(normaliseEmail)).select('email', 'profile_id');
    if (confirmedOnly) q.where('confirmed', true);
    const rows: Array<{ email: string; profile_id: string }> = await q;
    return rows.map((row) => ({ email: row.email, profileId: row.profile_id }));
  }

  /** Changes some columns of a profile and stamps `tmdate`. */
  async updateProfile(
    id: string,
    change: {
      state?: ProfileState;
      content?: ProfileContent;
      pastStates?: PastState[];
      passwordHash?: string;
      ddate?: number | null;
      mergedInto?: string;
    },
    now: number,
  ): Promise<void> {
    await this.#db('profiles')
      .where({ id })
      .update({
        ...(change.state !== undefined ? { state: change.state } : {}),
        ...(change.content !== undefined ? { content: JSON.stringify(change.content) } : {}),
        ...(change.pastStates !== undefined ? { past_states: JSON.stringify(change.pastStates) } : {}),
        ...(change.passwordHash !== undefined ? { password_hash: change.passwordHash } : {}),
        ...(change.ddate !== undefined ? { ddate: change.ddate } : {}),
        ...(change.mergedInto !== undefined ? { merged_into: change.mergedInto } : {}),
        tmdate: now,
      });
  }

  async touchLastLogin(id: string, now: number): Promise<void> {
    await this.#db('profiles').where({ id }).update({ last_login: now });
  }

  /** Ends every session of the profile at once: tokens carrying the old version are refused. */
  async incrementTokenVersion(id: string, now: number): Promise<number> {
    await this.#db('profiles').where({ id }).increment('token_version', 1).update({ tmdate: now });
    const row = await this.#db<ProfileRow>('profiles').where({ id }).first('token_version');
    return Number(row?.token_version);
  }

  // ---- emails and usernames -------------------------------------------------------------------

  async addEmail(profileId: string, email: string, confirmed: boolean, now: number): Promise<void> {
    await this.#db('profile_emails').insert({ email: normaliseEmail(email), profile_id: profileId, confirmed, created_at: now });
  }

  async emailsOf(profileId: string): Promise<EmailRecord[]> {
    const rows = await this.#db('profile_emails').where({ profile_id: profileId }).orderBy('created_at').orderBy('email');
    return rows.map((row: { email: string; confirmed: unknown }) => ({ email: row.email, confirmed: Boolean(row.confirmed) }));
  }

  async findEmail(email: string): Promise<{ email: string; profileId: string; confirmed: boolean } | null> {
    const row = await this.#db('profile_emails').where({ email: normaliseEmail(email) }).first();
    return row ? { email: row.email, profileId: row.profile_id, confirmed: Boolean(row.confirmed) } : null;
  }

  async confirmEmail(profileId: string, email: string): Promise<void> {
    await this.#db('profile_emails').where({ email: normaliseEmail(email), profile_id: profileId }).update({ confirmed: true });
  }

  /** Moves every email and username of one profile to another (a merge). */
  async moveEmailsAndUsernames(from: string, to: string): Promise<void> {
    await this.#db('profile_emails').where({ profile_id: from }).update({ profile_id: to });
    await this.#db('profile_usernames').where({ profile_id: from }).update({ profile_id: to });
  }

  async emailExists(email: string): Promise<boolean> {
    return (await this.#db('profile_emails').where({ email: normaliseEmail(email) }).first('email')) !== undefined;
  }

  async addUsername(profileId: string, base: string, number: number): Promise<string> {
    const username = `${base}${number}`;
    await this.#db('profile_usernames').insert({ username, base, number, profile_id: profileId });
    return username;
  }

  async usernamesOf(profileId: string): Promise<string[]> {
    const rows = await this.#db('profile_usernames').where({ profile_id: profileId }).orderBy('username');
    return rows.map((row: { username: string }) => row.username);
  }

  /**
   * A profile's emails (in `emailsOf`'s order) and usernames (in `usernamesOf`'s) in one query:
   * every answer that carries a session shows both.
   */
  async emailsAndUsernamesOf(profileId: string): Promise<{ emails: EmailRecord[]; usernames: string[] }> {
    const rows: Array<{ kind: string; value: string; confirmed: unknown }> = await this.#db('profile_emails')
      .where({ profile_id: profileId })
      .select(this.#db.raw("'email' as kind"), 'email as value', 'confirmed', 'created_at as sort')
      .unionAll((usernames) =>
        usernames
          .from('profile_usernames')
          .where({ profile_id: profileId })
          .select(this.#db.raw("'username' as kind"), 'username as value', this.#db.raw('null as confirmed'), this.#db.raw('0 as sort')),
      )
      .orderBy(['kind', 'sort', 'value']);
    return {
      emails: rows.filter((row) => row.kind === 'email').map((row) => ({ email: row.value, confirmed: Boolean(row.confirmed) })),
      usernames: rows.filter((row) => row.kind === 'username').map((row) => row.value),
    };
  }

  /** Numbers taken for a username base: by any profile (merged ones included), or reserved. */
  async usedNumbers(base: string): Promise<number[]> {
    const rows = await this.#db('profile_usernames')
      .where({ base })
      .select('number')
      .unionAll((reserved) => reserved.from('reserved_usernames').where({ base }).select('number'));
    return rows.map((row: { number: number }) => Number(row.number));
  }

  /**
   * Takes a tilde number without a profile: a sign-up with an address already in use does, as
   * a real sign-up would, so the next number shown does not tell whether the address was taken.
   */
  async reserveUsername(base: string, number: number, now: number): Promise<void> {
    await this.#db('reserved_usernames').insert({ username: `${base}${number}`, base, number, created_at: now }).onConflict('username').ignore();
  }

  // ---- groups ---------------------------------------------------------------------------------

  async upsertGroup(id: string, data: Record<string, unknown>, members: string[], now: number): Promise<void> {
    await this.#db('groups')
      .insert({ id, data: JSON.stringify(data), tcdate: now, tmdate: now })
      .onConflict('id')
      .merge({ data: JSON.stringify(data), tmdate: now });
    for (const member of members) await this.addMember(id, member);
  }

  /**
   * The two groups an email is linked to its profile by: the email's own group (member: the
   * profile) and the profile's `~Id` group (member: the email).
   */
  async linkEmailGroups(profileId: string, email: string, now: number): Promise<void> {
    const address = normaliseEmail(email);
    await this.upsertGroup(address, { readers: [address], writers: [profileId], signatures: [profileId], signatories: [address] }, [profileId], now);
    await this.addMember(profileId, address);
  }

  async addMember(groupId: string, member: string): Promise<void> {
    await this.#db('group_members').insert({ group_id: groupId, member }).onConflict(['group_id', 'member']).ignore();
  }

  async findGroup(id: string): Promise<GroupRecord | null> {
    const row = await this.#db('groups').where({ id }).first();
    if (!row) return null;
    const members = await this.#db('group_members').where({ group_id: id }).orderBy('member').pluck('member');
    return { id: row.id, data: json<Record<string, unknown>>(row.data), members };
  }

  /** The groups with these ids (without their members), by id. */
  async groupsAmong(ids: readonly string[]): Promise<Array<{ id: string; data: Record<string, unknown>; tcdate: number; tmdate: number }>> {
    if (ids.length === 0) return [];
    const rows: Array<{ id: string; data: string; tcdate: number; tmdate: number }> = await this.#db('groups').whereIn('id', ids).select('id', 'data', 'tcdate', 'tmdate').orderBy('id');
    return rows.map((row) => ({ id: row.id, data: json<Record<string, unknown>>(row.data), tcdate: Number(row.tcdate), tmdate: Number(row.tmdate) }));
  }

  /** The ids of the groups any of `members` belongs to directly. */
  async groupsOf(members: string[]): Promise<string[]> {
    if (members.length === 0) return [];
    return this.#db('group_members').whereIn('member', members).distinct().pluck('group_id');
  }

  /** The ids of the groups whose id starts with `prefix` (LIKE's wildcards taken literally). */
  async groupIdsWithPrefix(prefix: string, limit: number): Promise<string[]> {
    const pattern = prefix.replace(/[\\%_]/g, (c) => `\\${c}`) + '%';
    return this.#db('groups').whereRaw(`id like ? escape '\\'`, [pattern]).orderBy('id').limit(limit).pluck('id');
  }

  /** Every group that has an `impersonators` list, with that list. */
  async groupsWithImpersonators(): Promise<Array<{ id: string; impersonators: string[] }>> {
    const rows: Array<{ id: string; data: string }> = await this.#db('groups').select('id', 'data');
    return rows
      .map((row) => ({ id: row.id, impersonators: json<{ impersonators?: string[] }>(row.data).impersonators ?? [] }))
      .filter((group) => group.impersonators.length > 0);
  }

  /** Replaces `from` by `to` in every group's members (a merge). */
  async rewireMembers(from: string, to: string): Promise<void> {
    const groups = await this.#db('group_members').where({ member: from }).pluck('group_id');
    for (const group of groups) await this.addMember(group, to);
    await this.#db('group_members').where({ member: from }).delete();
  }

  async isMember(groupId: string, member: string): Promise<boolean> {
    return (await this.#db('group_members').where({ group_id: groupId, member }).first('member')) !== undefined;
  }

  /** Which of `groupIds` have `member` as a direct member: one query for several role checks. */
  async groupsWithMember(member: string, groupIds: readonly string[]): Promise<Set<string>> {
    const rows: Array<{ group_id: string }> = await this.#db('group_members').where({ member }).whereIn('group_id', groupIds).select('group_id');
    return new Set(rows.map((row) => row.group_id));
  }

  // ---- sessions -------------------------------------------------------------------------------

  async insertSession(session: {
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
    });
  }

  async findSession(id: string): Promise<SessionRecord | null> {
    const row = await this.#db<SessionRow>('sessions').where({ id }).first();
    return row ? toSession(row) : null;
  }

  async findSessionByRefreshHash(refreshHash: string): Promise<SessionRecord | null> {
    const row = await this.#db<SessionRow>('sessions').where({ refresh_hash: refreshHash }).first();
    return row ? toSession(row) : null;
  }

  /**
   * A session and its profile (null when the profile is gone) in one query, by session id or by
   * refresh-token hash: every signed-in request and every refresh needs both.
   */
  async findSessionWithProfile(
    by: { id: string } | { refreshHash: string },
  ): Promise<{ session: SessionRecord; profile: ProfileRecord | null; currentRefreshHash: string } | null> {
    const row = (await this.#db('sessions')
      .leftJoin('profiles', 'profiles.id', 'sessions.profile_id')
      .where('id' in by ? { 'sessions.id': by.id } : { 'sessions.refresh_hash': by.refreshHash })
      .first('sessions.*', ...JOINED_PROFILE)) as (SessionRow & Record<string, unknown>) | undefined;
    return row ? { session: toSession(row), profile: joinedProfile(row), currentRefreshHash: row.refresh_hash } : null;
  }

  /**
   * Gives a live session a new refresh token. With `oldHash`, only if the session still has
   * that one: when two requests race with the same refresh token, exactly one wins. The token
   * rotated out is kept (with the one that replaced it), so presenting it again is recognised
   * as reuse; kept ones older than `keepMs` are let go.
   */
  async rotateRefresh(id: string, newHash: string, expiresAt: number, oldHash: string | null, now: number, keepMs = 90 * 24 * 60 * 60 * 1000): Promise<boolean> {
    return this.#db.transaction(async (trx) => {
      const row = await trx('sessions').where({ id }).whereNull('revoked_at').first('refresh_hash');
      if (!row || (oldHash !== null && row.refresh_hash !== oldHash)) return false;
      const changed = await trx('sessions')
        .where({ id, refresh_hash: row.refresh_hash })
        .whereNull('revoked_at')
        .update({ refresh_hash: newHash, expires_at: expiresAt });
      if (changed !== 1) return false;
      await trx('session_refresh_history').where({ session_id: id }).where('rotated_at', '<', now - keepMs).delete();
      await trx('session_refresh_history')
        .insert({ refresh_hash: row.refresh_hash, session_id: id, next_hash: newHash, rotated_at: now })
        .onConflict('refresh_hash')
        .ignore();
      return true;
    });
  }

  /** A refresh token some session has rotated out: which session, what replaced it, and when. */
  async findRotatedRefresh(refreshHash: string): Promise<{ sessionId: string; nextHash: string; rotatedAt: number } | null> {
    const row = await this.#db('session_refresh_history').where({ refresh_hash: refreshHash }).first();
    return row ? { sessionId: row.session_id, nextHash: row.next_hash, rotatedAt: Number(row.rotated_at) } : null;
  }

  async setSessionVersion(id: string, tokenVersion: number): Promise<void> {
    await this.#db('sessions').where({ id }).update({ token_version: tokenVersion });
  }

  async revokeSession(id: string, now: number): Promise<void> {
    await this.#db('sessions').where({ id }).whereNull('revoked_at').update({ revoked_at: now });
  }

  /** Ends the impersonation sessions opened from any session of a profile. */
  async revokeImpersonationsFrom(profileId: string, now: number): Promise<void> {
    await this.#db('sessions')
      .whereIn('parent_session_id', this.#db('sessions').where({ profile_id: profileId }).select('id'))
      .whereNull('revoked_at')
      .update({ revoked_at: now });
  }

  /** Ends every session of a profile but one (`keep`, which may be null to end them all). */
  async revokeOtherSessions(profileId: string, keep: string | null, now: number): Promise<void> {
    const query = this.#db('sessions').where({ profile_id: profileId }).whereNull('revoked_at');
    if (keep) query.whereNot({ id: keep });
    await query.update({ revoked_at: now });
  }

  // ---- one-time tokens ------------------------------------------------------------------------

  /**
   * Stores a new token of a kind for a profile and voids the older ones of that kind (for email
   * confirmations: of that address, so confirming two addresses at once works).
   */
  async replaceToken(token: {
    kind: TokenKind;
    tokenHash: string;
    codeHash: string | null;
    profileId: string;
    email: string | null;
    duplicateProfile?: string | null;
    now: number;
    expiresAt: number;
  }): Promise<void> {
    const older = this.#db('account_tokens').where({ profile_id: token.profileId, kind: token.kind }).whereNull('used_at');
    if (token.kind === 'email') older.where({ email: token.email });
    await older.update({ used_at: token.now });
    await this.#db('account_tokens').insert({
      kind: token.kind,
      token_hash: token.tokenHash,
      code_hash: token.codeHash,
      profile_id: token.profileId,
      email: token.email,
      duplicate_profile: token.duplicateProfile ?? null,
      created_at: token.now,
      expires_at: token.expiresAt,
    });
  }

  /** A token that is neither used nor expired, by the hash of its secret. */
  async findLiveToken(kind: TokenKind, tokenHash: string, now: number): Promise<TokenRecord | null> {
    const row = await this.#db<TokenRow>('account_tokens')
      .where({ kind, token_hash: tokenHash })
      .whereNull('used_at')
      .where('expires_at', '>', now)
      .first();
    return row ? toToken(row) : null;
  }

  /** The live email-confirmation token of a profile for an address. */
  async findLiveEmailToken(profileId: string, email: string, now: number): Promise<TokenRecord | null> {
    const row = await this.#db<TokenRow>('account_tokens')
      .where({ kind: 'email', profile_id: profileId, email: normaliseEmail(email) })
      .whereNull('used_at')
      .where('expires_at', '>', now)
      .orderBy('id', 'desc')
      .first();
    return row ? toToken(row) : null;
  }

  /**
   * Uses a token up: `UPDATE … WHERE used_at IS NULL` must change exactly one row, so of two
   * simultaneous uses one succeeds and the other gets false.
   */
  async consumeToken(id: number, now: number): Promise<boolean> {
    const changed = await this.#db('account_tokens')
      .where({ id })
      .whereNull('used_at')
      .where('expires_at', '>', now)
      .update({ used_at: now });
    return changed === 1;
  }

  /** Counts a wrong code; at `maxAttempts` wrong codes the token is void. */
  async recordWrongCode(id: number, now: number, maxAttempts: number): Promise<void> {
    await this.#db('account_tokens').where({ id }).increment('attempts', 1);
    await this.#db('account_tokens').where({ id }).whereNull('used_at').where('attempts', '>=', maxAttempts).update({ used_at: now });
  }

  /** Voids every outstanding token of a kind for a profile. */
  async voidTokens(profileId: string, kind: TokenKind, now: number): Promise<void> {
    await this.#db('account_tokens').where({ profile_id: profileId, kind }).whereNull('used_at').update({ used_at: now });
  }

  // ---- settings, institutions, audit ----------------------------------------------------------

  async getSetting(key: string): Promise<string | null> {
    const row = await this.#db('settings').where({ key }).first('value');
    return row ? String(row.value) : null;
  }

  async setSetting(key: string, value: string): Promise<void> {
    await this.#db('settings').insert({ key, value }).onConflict('key').merge({ value });
  }

  async institutionDomains(): Promise<string[]> {
    return this.#db('institutions').orderBy('domain').pluck('domain');
  }

  async addInstitution(domain: string, name: string, country: string | null): Promise<void> {
    await this.#db('institutions').insert({ domain: domain.toLowerCase(), name, country }).onConflict('domain').merge({ name, country });
  }

  async audit(entry: AuditEntry, now: number): Promise<void> {
    await this.#db('audit_log').insert({
      at: now,
      actor: entry.actor,
      action: entry.action,
      target: entry.target,
      reason: entry.reason ?? null,
      details: entry.details ? JSON.stringify(entry.details) : null,
    });
  }
}
