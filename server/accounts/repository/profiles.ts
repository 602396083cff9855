import type { Knex } from 'knex';
import { fromJson as json } from '../../../db/json.ts';
import type { PastState, ProfileContent, ProfileState } from '../../../shared/index.ts';
import { normaliseEmail, normaliseId } from '../ids.ts';

/** The row as stored; JSON columns are text, parsed here and nowhere else. */
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
export const JOINED_PROFILE = PROFILE_COLUMNS.map((column) => `profiles.${column} as p_${column}`);

/** The profile read alongside another table's row under `JOINED_PROFILE`'s names (null when the join found none). */
export function joinedProfile(row: Record<string, unknown>): ProfileRecord | null {
  if (row.p_id === null || row.p_id === undefined) return null;
  return toProfile(Object.fromEntries(PROFILE_COLUMNS.map((column) => [column, row[`p_${column}`]])) as unknown as ProfileRow);
}

/**
 * The profile's columns that hold JSON text: always an object or an array, as `JSON.stringify`
 * wrote it from validated content (SQLite's `json(…)` reads a JSON string inside as JSON again,
 * and accepts JSON5, neither of which these columns hold).
 */
const JSON_COLUMNS: ReadonlySet<string> = new Set(['content', 'past_states'] satisfies Array<keyof ProfileRow>);

/**
 * The profile whose id is `idColumn` as one JSON object column, on SQLite: an `UPDATE … RETURNING`
 * there may not name another table's columns, but may select them in a subquery. One subquery
 * (one seek of the key) rather than one a column; its keys are the stored columns' names, and its
 * JSON columns are nested as JSON (`json(…)`), not as text to be parsed a second time. Read it
 * with `profileFromJson`.
 */
export function profileAsJsonSqlite(idColumn: string): string {
  const values = PROFILE_COLUMNS.map((column) => `'${column}', ${JSON_COLUMNS.has(column) ? `json(${column})` : column}`);
  return `(select json_object(${values.join(', ')}) from profiles where profiles.id = ${idColumn})`;
}

/** The profile in a column made by `profileAsJsonSqlite` (null when none was found). */
export function profileFromJson(value: unknown): ProfileRecord | null {
  return value === null || value === undefined ? null : toProfile(json<ProfileRow>(value));
}

/** SQL for `profiles`: a person's account, its state, content and token version. Given its Knex (or a transaction). */
export class ProfilesRepository {
  readonly #db: Knex;

  constructor(db: Knex) {
    this.#db = db;
  }

  async insert(profile: {
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

  async find(id: string): Promise<ProfileRecord | null> {
    const row = await this.#db<ProfileRow>('profiles').where({ id }).first();
    return row ? toProfile(row) : null;
  }

  /** The profile a tilde username belongs to (any of its usernames, not only its id). */
  async findByUsername(username: string): Promise<ProfileRecord | null> {
    const row = await this.#db<ProfileRow>('profiles')
      .join('profile_usernames', 'profile_usernames.profile_id', 'profiles.id')
      .where('profile_usernames.username', normaliseId(username))
      .first('profiles.*');
    return row ? toProfile(row) : null;
  }

  /** The profiles of these ids, by id (unknown ones left out): one statement, however many. */
  async findMany(ids: readonly string[]): Promise<Map<string, ProfileRecord>> {
    const rows = ids.length === 0 ? [] : await this.#db<ProfileRow>('profiles').whereIn('id', [...new Set(ids)]);
    return new Map(rows.map((row) => [row.id, toProfile(row)]));
  }

  /**
   * The profiles these tilde usernames belong to, by username as `normaliseId` spells it
   * (unknown ones left out): `findByUsername` for many, in one statement.
   */
  async findManyByUsername(usernames: readonly string[]): Promise<Map<string, ProfileRecord>> {
    if (usernames.length === 0) return new Map();
    const rows: Array<ProfileRow & { p_username: string }> = await this.#db('profiles')
      .join('profile_usernames', 'profile_usernames.profile_id', 'profiles.id')
      .whereIn('profile_usernames.username', [...new Set(usernames.map(normaliseId))])
      .select('profiles.*', 'profile_usernames.username as p_username');
    return new Map(rows.map((row) => [row.p_username, toProfile(row)]));
  }

  /**
   * The profile holding an address; `confirmedOnly`: only while the address is confirmed (what
   * anyone but the holder and moderators may learn: a sign-up not yet activated names nobody).
   */
  async findByEmail(email: string, { confirmedOnly = false } = {}): Promise<ProfileRecord | null> {
    const q = this.#db<ProfileRow>('profiles')
      .join('profile_emails', 'profile_emails.profile_id', 'profiles.id')
      .where('profile_emails.email', normaliseEmail(email));
    if (confirmedOnly) q.where('profile_emails.confirmed', true);
    const row = await q.first('profiles.*');
    return row ? toProfile(row) : null;
  }

  /** The profile a person names by a tilde username or an email, as every form lets them; `confirmedOnly`: by an address only while confirmed (`findByEmail`). */
  async findByIdOrEmail(id: string, opts: { confirmedOnly?: boolean } = {}): Promise<ProfileRecord | null> {
    const canonical = normaliseId(id);
    return canonical.startsWith('~') ? this.findByUsername(canonical) : this.findByEmail(canonical, opts);
  }

  async list(): Promise<ProfileRecord[]> {
    const rows = await this.#db<ProfileRow>('profiles').orderBy('tcdate').orderBy('id');
    return rows.map(toProfile);
  }

  /** Changes some columns of a profile and stamps `tmdate`. */
  async update(
    id: string,
    change: {
      state?: ProfileState;
      content?: ProfileContent;
      pastStates?: PastState[];
      /** null: no password signs the profile in until a reset sets one ("This was not me"). */
      passwordHash?: string | null;
      ddate?: number | null;
      mergedInto?: string;
      /** When the date of birth in effect was first supplied (`profile-editor.ts`). */
      dobTimestamp?: number | null;
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
        ...(change.dobTimestamp !== undefined ? { dob_timestamp: change.dobTimestamp } : {}),
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
}
