import type { Knex } from 'knex';
import { fromJson as json } from '../../../db/json.ts';
import { normaliseEmail } from '../ids.ts';

export interface GroupRecord {
  id: string;
  data: Record<string, unknown>;
  members: string[];
}

/** SQL for `groups` and `group_members`. Given its Knex (or a transaction). */
export class GroupsRepository {
  readonly #db: Knex;

  constructor(db: Knex) {
    this.#db = db;
  }

  async upsert(id: string, data: Record<string, unknown>, members: string[], now: number): Promise<void> {
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
    await this.upsert(address, { readers: [address], writers: [profileId], signatures: [profileId], signatories: [address] }, [profileId], now);
    await this.addMember(profileId, address);
  }

  async addMember(groupId: string, member: string): Promise<void> {
    await this.#db('group_members').insert({ group_id: groupId, member }).onConflict(['group_id', 'member']).ignore();
  }

  async find(id: string): Promise<GroupRecord | null> {
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

  /**
   * The ids of the groups whose id starts with `prefix` (LIKE's wildcards taken literally), in
   * order, at most `limit` of them, after `after` when given (a page's cursor, so the limit counts
   * from there).
   */
  async groupIdsWithPrefix(prefix: string, limit: number, after?: string): Promise<string[]> {
    const pattern = prefix.replace(/[\\%_]/g, (c) => `\\${c}`) + '%';
    const query = this.#db('groups').whereRaw(`id like ? escape '\\'`, [pattern]);
    if (after !== undefined) query.where('id', '>', after);
    return query.orderBy('id').limit(limit).pluck('id');
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
}
