import type { Knex } from 'knex';
import type { ProfileState } from '../../shared/index.ts';

/**
 * What venues ask of the other areas, each answered by the area that owns the tables behind it
 * and wired in server/services.ts.
 */

/** A group as accounts keep it: its data (`domain`, `config`, lists of ids) and its members. */
export interface GroupView {
  id: string;
  data: Record<string, unknown>;
  members: string[];
}

/**
 * People and groups, from accounts (its `Directory`): the ids a reader answers to, the groups a
 * venue is made of, and the state of a note's authors.
 */
export interface People {
  /** The same, inside a transaction of the venue's: a venue and its groups are written together. */
  within(trx: Knex.Transaction): People;
  usernamesOf(profileId: string): Promise<string[]>;
  confirmedEmailsOf(profileId: string): Promise<string[]>;
  profileNamed(idOrEmail: string): Promise<{ id: string; state: ProfileState } | null>;
  /** The state of the profile a tilde id or a confirmed address names, as anyone signed in may learn it; null for none (or a deleted one). */
  shownStateOf(idOrEmail: string): Promise<ProfileState | null>;
  findGroup(id: string): Promise<GroupView | null>;
  groupsAmong(ids: readonly string[]): Promise<Array<{ id: string; data: Record<string, unknown>; tcdate: number; tmdate: number }>>;
  groupsOf(members: string[]): Promise<string[]>;
  groupIdsWithPrefix(prefix: string, limit: number, after?: string): Promise<string[]>;
  upsertGroup(id: string, data: Record<string, unknown>, members: string[], now: number): Promise<void>;
  addMember(groupId: string, member: string): Promise<void>;
}

/** Stored files, from attachments: a note's `file` field may hold only a file its author uploaded for it. */
export interface UploadsView {
  uploadedBy(profileId: string, url: string, invitation: string, field: string): Promise<boolean>;
}
