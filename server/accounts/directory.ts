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
    return this.#repo.usernamesOf(profileId);
  }

  /** A profile's confirmed emails (an unconfirmed address proves nothing), in order. */
  async confirmedEmailsOf(profileId: string): Promise<string[]> {
    return (await this.#repo.emailsOf(profileId)).filter((e) => e.confirmed).map((e) => e.email);
  }

  /** A profile's state, by its id. */
  async stateOf(profileId: string): Promise<ProfileState | null> {
    return (await this.#repo.findProfile(profileId))?.state ?? null;
  }

  /** The profile a tilde username or an email names, as every form lets people name one. */
  async profileNamed(idOrEmail: string): Promise<{ id: string; state: ProfileState } | null> {
    const profile = await this.#repo.findProfileByIdOrEmail(idOrEmail);
    return profile ? { id: profile.id, state: profile.state } : null;
  }

  findGroup(id: string): Promise<GroupRecord | null> {
    return this.#repo.findGroup(id);
  }

  /** The groups with these ids (without their members), by id. */
  groupsAmong(ids: readonly string[]): Promise<Array<{ id: string; data: Record<string, unknown>; tcdate: number; tmdate: number }>> {
    return this.#repo.groupsAmong(ids);
  }

  /** The ids of the groups any of `members` belongs to directly. */
  groupsOf(members: string[]): Promise<string[]> {
    return this.#repo.groupsOf(members);
  }

  groupIdsWithPrefix(prefix: string, limit: number): Promise<string[]> {
    return this.#repo.groupIdsWithPrefix(prefix, limit);
  }

  upsertGroup(id: string, data: Record<string, unknown>, members: string[], now: number): Promise<void> {
    return this.#repo.upsertGroup(id, data, members, now);
  }

  addMember(groupId: string, member: string): Promise<void> {
    return this.#repo.addMember(groupId, member);
  }
}
