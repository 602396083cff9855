import type { Knex } from 'knex';
import type { ProfileState } from '../../shared/index.ts';
import { AccountsRepository, type GroupRecord } from './repository.ts';

/**
 * What accounts tell the other areas about people and groups (venues are built of groups): the
 * ids a profile answers to, the groups they belong to, and writes to groups. Accounts own the
 * tables behind it. Given its Knex, or with `within` the transaction of the area that asks, so a
 * venue and its groups are written together.
 */
export class Directory {
  readonly #repo: AccountsRepository;

  constructor(db: Knex) {
    this.#repo = new AccountsRepository(db);
  }

  within(trx: Knex.Transaction): Directory {
    return new Directory(trx);
  }

  /** A profile's usernames (its id among them), in order. */
  usernamesOf(profileId: string): Promise<string[]> {
    return this.#repo.emails.usernamesOf(profileId);
  }

  /** A profile's confirmed emails (an unconfirmed address proves nothing), in order. */
  async confirmedEmailsOf(profileId: string): Promise<string[]> {
    return (await this.#repo.emails.emailsOf(profileId)).filter((e) => e.confirmed).map((e) => e.email);
  }

  /** The profile a tilde username or an email names, as every form lets people name one. */
  async profileNamed(idOrEmail: string): Promise<{ id: string; state: ProfileState } | null> {
    const profile = await this.#repo.profiles.findByIdOrEmail(idOrEmail);
    return profile ? { id: profile.id, state: profile.state } : null;
  }

  /**
   * A profile's state as anyone signed in may learn it (the author console's, for a note's
   * authors): named by a tilde id, as `GET /profiles?id=` shows it, or by a confirmed address
   * (an unconfirmed one, a sign-up not yet activated among them, names nobody, as in searches);
   * a deleted profile is nobody's. Null: no such profile to show.
   */
  async shownStateOf(idOrEmail: string): Promise<ProfileState | null> {
    const profile = await this.#repo.profiles.findByIdOrEmail(idOrEmail, { confirmedOnly: true });
    return profile && profile.ddate === null ? profile.state : null;
  }

  findGroup(id: string): Promise<GroupRecord | null> {
    return this.#repo.groups.find(id);
  }

  /** The groups with these ids (without their members), by id. */
  groupsAmong(ids: readonly string[]): Promise<Array<{ id: string; data: Record<string, unknown>; tcdate: number; tmdate: number }>> {
    return this.#repo.groups.groupsAmong(ids);
  }

  /** The ids of the groups any of `members` belongs to directly. */
  groupsOf(members: string[]): Promise<string[]> {
    return this.#repo.groups.groupsOf(members);
  }

  groupIdsWithPrefix(prefix: string, limit: number, after?: string): Promise<string[]> {
    return this.#repo.groups.groupIdsWithPrefix(prefix, limit, after);
  }

  upsertGroup(id: string, data: Record<string, unknown>, members: string[], now: number): Promise<void> {
    return this.#repo.groups.upsert(id, data, members, now);
  }

  addMember(groupId: string, member: string): Promise<void> {
    return this.#repo.groups.addMember(groupId, member);
  }
}
