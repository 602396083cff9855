import type { Knex } from 'knex';
import { CompiledQuery } from '../../../db/compiled.ts';
import { fromJson } from '../../../db/json.ts';
import { isPostgres } from '../../../db/postgres.ts';
import { normaliseEmail } from '../ids.ts';

export interface EmailRecord {
  email: string;
  confirmed: boolean;
}

/** A username's base as searches compare it (the `base_key` column): NFC, lower-cased in every script. */
export function searchKey(base: string): string {
  return base.normalize('NFC').toLowerCase();
}

/** Which profiles a search shows besides active ones: deleted ones, blocked ones (merged ones never). */
export interface SearchIncludes {
  deleted: boolean;
  blocked: boolean;
}
export interface SearchPage {
  offset: number;
  limit: number;
}
/** A page of a search's profile ids, by id, and how many profiles it finds in all. */
export interface SearchedProfiles {
  ids: string[];
  count: number;
}

/** The page `page` of the profiles a query on `profiles` finds, as a search shows them, and how many those are: the one rule of `GET /profiles/search`. */
async function searchPage(matching: Knex.QueryBuilder, include: SearchIncludes, page: SearchPage): Promise<SearchedProfiles> {
  matching.whereNull('profiles.merged_into');
  if (!include.deleted) matching.whereNull('profiles.ddate');
  if (!include.blocked) matching.whereNot('profiles.state', 'Blocked');
  const [counted] = (await matching.clone().countDistinct({ n: 'profiles.id' })) as Array<{ n: number | string }>;
  const ids: string[] = await matching.distinct('profiles.id').orderBy('profiles.id').offset(page.offset).limit(page.limit).pluck('profiles.id');
  return { ids, count: Number(counted?.n ?? 0) };
}

/** A profile's emails and usernames: what a signed-in person's answers show of them. */
export interface EmailsAndUsernames {
  emails: EmailRecord[];
  usernames: string[];
}

/**
 * A profile's emails and usernames as two columns (`p_emails`, `p_usernames`) of a statement
 * that reads `profiles`, each a JSON array in `emailsOf`'s and `usernamesOf`'s orders (emails by
 * when they were added, then by address; usernames by name). Read them with `emailsAndUsernamesIn`.
 */
export function emailsAndUsernamesColumns(db: Knex): Knex.Raw[] {
  return emailsAndUsernamesSql(isPostgres(db), 'profiles.id').map((sql) => db.raw(sql));
}

/** `emailsAndUsernamesColumns` as SQL text, for the profile whose id is `idColumn`. */
export function emailsAndUsernamesSql(postgres: boolean, idColumn: string): [string, string] {
  return postgres
    ? [
        `(select coalesce(json_agg(json_build_array(email, confirmed) order by created_at, email), '[]'::json) from profile_emails where profile_id = ${idColumn}) as p_emails`,
        `(select coalesce(json_agg(username order by username), '[]'::json) from profile_usernames where profile_id = ${idColumn}) as p_usernames`,
      ]
    : [
        `(select json_group_array(json_array(email, confirmed) order by created_at, email) from profile_emails where profile_id = ${idColumn}) as p_emails`,
        `(select json_group_array(username order by username) from profile_usernames where profile_id = ${idColumn}) as p_usernames`,
      ];
}

/** The emails and usernames of a row read with `emailsAndUsernamesColumns`. */
export function emailsAndUsernamesIn(row: Record<string, unknown>): EmailsAndUsernames {
  return {
    emails: fromJson<Array<[string, unknown]>>(row.p_emails).map(([email, confirmed]) => ({ email, confirmed: Boolean(confirmed) })),
    usernames: fromJson<string[]>(row.p_usernames),
  };
}

/** The numbers taken for a username base (`usedNumbers`), compiled once: every `GET /tildeusername` and every sign-up asks. */
const USED_NUMBERS = new CompiledQuery(['base'], (db, param) =>
  db('profile_usernames')
    .where({ base: param.base })
    .select('number')
    .unionAll((reserved) => reserved.from('reserved_usernames').where({ base: param.base }).select('number')),
);
/** A profile's emails and usernames by its id, in one statement (compiled once: every sign-in sends it). */
const EMAILS_AND_USERNAMES = new CompiledQuery(['profileId'], (db, param) => db('profiles').where({ id: param.profileId }).select(...emailsAndUsernamesColumns(db)));

/**
 * SQL for `profile_emails`, `profile_usernames` and `reserved_usernames`: the addresses and
 * tilde usernames a profile is known by. Given its Knex (or a transaction).
 */
export class EmailsRepository {
  readonly #db: Knex;

  constructor(db: Knex) {
    this.#db = db;
  }

  async addEmail(profileId: string, email: string, confirmed: boolean, now: number): Promise<void> {
    await this.#db('profile_emails').insert({ email: normaliseEmail(email), profile_id: profileId, confirmed, created_at: now });
  }

  async emailsOf(profileId: string): Promise<EmailRecord[]> {
    const rows = await this.#db('profile_emails').where({ profile_id: profileId }).orderBy('created_at').orderBy('email');
    return rows.map((row: { email: string; confirmed: unknown }) => ({ email: row.email, confirmed: Boolean(row.confirmed) }));
  }

  /** The profile's addresses added at or after `since`. */
  async addedSince(profileId: string, since: number): Promise<string[]> {
    const rows = await this.#db('profile_emails').where({ profile_id: profileId }).andWhere('created_at', '>=', since).orderBy('email');
    return rows.map((row: { email: string }) => row.email);
  }

  /** The emails of these profiles, each profile's in `emailsOf`'s order, in one statement; a profile without any is left out. */
  async emailsOfMany(profileIds: readonly string[]): Promise<Map<string, EmailRecord[]>> {
    const byProfile = new Map<string, EmailRecord[]>();
    if (profileIds.length === 0) return byProfile;
    const rows: Array<{ profile_id: string; email: string; confirmed: unknown }> = await this.#db('profile_emails')
      .whereIn('profile_id', [...new Set(profileIds)])
      .orderBy('profile_id')
      .orderBy('created_at')
      .orderBy('email')
      .select('profile_id', 'email', 'confirmed');
    for (const row of rows) {
      const emails = byProfile.get(row.profile_id) ?? [];
      if (emails.length === 0) byProfile.set(row.profile_id, emails);
      emails.push({ email: row.email, confirmed: Boolean(row.confirmed) });
    }
    return byProfile;
  }

  async findEmail(email: string): Promise<{ email: string; profileId: string; confirmed: boolean } | null> {
    const row = await this.#db('profile_emails').where({ email: normaliseEmail(email) }).first();
    return row ? { email: row.email, profileId: row.profile_id, confirmed: Boolean(row.confirmed) } : null;
  }

  async confirmEmail(profileId: string, email: string): Promise<void> {
    await this.#db('profile_emails').where({ email: normaliseEmail(email), profile_id: profileId }).update({ confirmed: true });
  }

  /**
   * Removes an address from a profile, with the group named after it and its membership in the
   * profile's own group (`linkEmailGroups` undone); false when the profile did not hold it.
   */
  async removeEmail(profileId: string, email: string): Promise<boolean> {
    const address = normaliseEmail(email);
    const removed = await this.#db('profile_emails').where({ email: address, profile_id: profileId }).delete();
    if (removed !== 1) return false;
    await this.#db('group_members').where({ member: address }).delete();
    await this.#db('groups').where({ id: address }).delete();
    return true;
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
    await this.#db('profile_usernames').insert({ username, base, base_key: searchKey(base), number, profile_id: profileId });
    return username;
  }

  async usernamesOf(profileId: string): Promise<string[]> {
    const rows = await this.#db('profile_usernames').where({ profile_id: profileId }).orderBy('username');
    return rows.map((row: { username: string }) => row.username);
  }

  /**
   * A profile's emails (in `emailsOf`'s order) and usernames (in `usernamesOf`'s) in one query:
   * every answer that carries a session shows both. None for a profile that does not exist.
   */
  async emailsAndUsernamesOf(profileId: string): Promise<EmailsAndUsernames> {
    const [row] = await EMAILS_AND_USERNAMES.rows<Record<string, unknown>>(this.#db, { profileId });
    return row ? emailsAndUsernamesIn(row) : { emails: [], usernames: [] };
  }

  /** Numbers taken for a username base: by any profile (merged ones included), or reserved. */
  async usedNumbers(base: string): Promise<number[]> {
    const rows = await USED_NUMBERS.rows<{ number: number | string }>(this.#db, { base });
    return rows.map((row) => Number(row.number));
  }

  /**
   * Takes a tilde number without a profile: a sign-up with an address already in use does, as
   * a real sign-up would, so the next number shown does not tell whether the address was taken.
   */
  async reserveUsername(base: string, number: number, now: number): Promise<void> {
    await this.#db('reserved_usernames').insert({ username: `${base}${number}`, base, number, created_at: now }).onConflict('username').ignore();
  }

  /**
   * A page of the profiles holding a username whose base (`~Ada_Lovelace`) is `base`, or starts
   * with it, ignoring case in every script (`searchKey`; LIKE's wildcards in `base` taken
   * literally), as a search shows them (`SearchedProfiles`).
   */
  searchByUsernameBase(base: string, match: 'exact' | 'prefix', include: SearchIncludes, page: SearchPage): Promise<SearchedProfiles> {
    const pattern = searchKey(base).replace(/[\\%_]/g, (c) => `\\${c}`) + (match === 'prefix' ? '%' : '');
    const matching = this.#db('profile_usernames')
      .join('profiles', 'profiles.id', 'profile_usernames.profile_id')
      .where((q) =>
        q
          .whereRaw(`profile_usernames.base_key like ? escape '\\'`, [pattern])
          // A username written by a process of the version before `base_key`, during an upgrade.
          .orWhere((old) => old.whereNull('profile_usernames.base_key').whereRaw(`lower(profile_usernames.base) like ? escape '\\'`, [pattern])),
      );
    return searchPage(matching, include, page);
  }

  /** A page of the profiles `ids` (unknown ones left out), as a search shows them (`SearchedProfiles`). */
  searchAmong(ids: readonly string[], include: SearchIncludes, page: SearchPage): Promise<SearchedProfiles> {
    return searchPage(this.#db('profiles').whereIn('profiles.id', [...new Set(ids)]), include, page);
  }

  /** Which profile holds each of these addresses (confirmed ones only, when asked). */
  async holdersOfEmails(emails: readonly string[], confirmedOnly: boolean): Promise<Array<{ email: string; profileId: string }>> {
    if (emails.length === 0) return [];
    const q = this.#db('profile_emails').whereIn('email', emails.map(normaliseEmail)).select('email', 'profile_id');
    if (confirmedOnly) q.where('confirmed', true);
    const rows: Array<{ email: string; profile_id: string }> = await q;
    return rows.map((row) => ({ email: row.email, profileId: row.profile_id }));
  }
}
