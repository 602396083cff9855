import type { Knex } from 'knex';
import type { PastState, ProfileContent, ProfileState } from '../../shared/index.ts';

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
  expiresAt: number;
  revokedAt: number | null;
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
}

/** Postgres hands JSON columns back parsed, SQLite as text: accept both. */
function json<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
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
    expiresAt: Number(row.expires_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
  };
}

/** Emails are compared and stored lower-cased. */
export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

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
      .where('profile_usernames.username', username)
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

  async listProfiles(): Promise<ProfileRecord[]> {
    const rows = await this.#db<ProfileRow>('profiles').orderBy('tcdate').orderBy('id');
    return rows.map(toProfile);
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

  /** Numbers taken by any profile (merged ones included) for a username base. */
  async usedNumbers(base: string): Promise<number[]> {
    const rows = await this.#db('profile_usernames').where({ base }).select('number');
    return rows.map((row: { number: number }) => Number(row.number));
  }

  // ---- groups ---------------------------------------------------------------------------------

  async upsertGroup(id: string, data: Record<string, unknown>, members: string[], now: number): Promise<void> {
    await this.#db('groups')
      .insert({ id, data: JSON.stringify(data), tcdate: now, tmdate: now })
      .onConflict('id')
      .merge({ data: JSON.stringify(data), tmdate: now });
    for (const member of members) await this.addMember(id, member);
  }

  async addMember(groupId: string, member: string): Promise<void> {
    await this.#db('group_members').insert({ group_id: groupId, member }).onConflict(['group_id', 'member']).ignore();
  }

  async isMember(groupId: string, member: string): Promise<boolean> {
    return (await this.#db('group_members').where({ group_id: groupId, member }).first('member')) !== undefined;
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
  }): Promise<void> {
    await this.#db('sessions').insert({
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
   * Gives a live session a new refresh token. With `oldHash`, only if the session still has
   * that one: when two requests race with the same refresh token, exactly one wins.
   */
  async rotateRefresh(id: string, newHash: string, expiresAt: number, oldHash: string | null): Promise<boolean> {
    const query = this.#db('sessions').where({ id }).whereNull('revoked_at');
    if (oldHash !== null) query.where({ refresh_hash: oldHash });
    const changed = await query.update({ refresh_hash: newHash, expires_at: expiresAt });
    return changed === 1;
  }

  async setSessionVersion(id: string, tokenVersion: number): Promise<void> {
    await this.#db('sessions').where({ id }).update({ token_version: tokenVersion });
  }

  async revokeSession(id: string, now: number): Promise<void> {
    await this.#db('sessions').where({ id }).whereNull('revoked_at').update({ revoked_at: now });
  }

  /** Ends every session of a profile but one (`keep`, which may be null to end them all). */
  async revokeOtherSessions(profileId: string, keep: string | null, now: number): Promise<void> {
    const query = this.#db('sessions').where({ profile_id: profileId }).whereNull('revoked_at');
    if (keep) query.whereNot({ id: keep });
    await query.update({ revoked_at: now });
  }

  // ---- one-time tokens ------------------------------------------------------------------------

  /** Stores a new token of a kind for a profile, voiding the older ones of that kind. */
  async replaceToken(token: {
    kind: string;
    tokenHash: string;
    codeHash: string | null;
    profileId: string;
    email: string | null;
    now: number;
    expiresAt: number;
  }): Promise<void> {
    await this.#db('account_tokens')
      .where({ profile_id: token.profileId, kind: token.kind })
      .whereNull('used_at')
      .update({ used_at: token.now });
    await this.#db('account_tokens').insert({
      kind: token.kind,
      token_hash: token.tokenHash,
      code_hash: token.codeHash,
      profile_id: token.profileId,
      email: token.email,
      created_at: token.now,
      expires_at: token.expiresAt,
    });
  }
}
