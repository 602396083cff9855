import { AppError } from '../../shared/index.ts';
import type { Viewer } from '../accounts/viewer.ts';
import type { People } from './collaborators.ts';
import type { VenueRepository } from './repository.ts';

/** The group of a venue's organisers: they manage its invitations and groups. */
export const organisersOf = (venueId: string) => `${venueId}/Program_Chairs`;
export const reviewersOf = (venueId: string) => `${venueId}/Reviewers`;

/** Who is asking: a signed-in caller, or a guest (null). */
export type Reader = Viewer | null;

/** What a venue service reads and writes with: its own repository, and accounts' people and groups (the same transaction's, inside one). */
export interface Repos {
  people: People;
  venues: VenueRepository;
}

/** What every venue service is built from; services.ts makes them. */
export interface VenueDeps {
  repo: VenueRepository;
  people: People;
  readers: Readers;
  now?: () => number;
}

/**
 * Who a reader is, for the readers, writers and invitees lists of venues, invitations and notes:
 * every rule of who may read or write goes through these.
 */
export class Readers {
  readonly #people: People;

  constructor(people: People) {
    this.#people = people;
  }

  /**
   * Every id the reader answers to: `everyone`; and for a signed-in caller `~` (any signed-in
   * user), their profile's usernames and emails, the groups those belong to, and the groups
   * those groups belong to. `people` is a transaction's, inside one; `known`: the reader's own ids (`ownIds`), when the caller read them already.
   */
  async identities(reader: Reader, people = this.#people, known?: string[]): Promise<Set<string>> {
    const ids = new Set(['everyone']);
    if (!reader) return ids;
    ids.add('~');
    const own = known ?? (await this.ownIds(reader, people));
    const groups = await people.groupsOf(own);
    const outer = await people.groupsOf(groups);
    for (const id of [...own, ...groups, ...outer]) ids.add(id);
    return ids;
  }

  /** The person's own ids, not the groups they are in: their usernames, profile id and confirmed emails. */
  async ownIds(reader: Viewer, people = this.#people): Promise<string[]> {
    return [...(await people.usernamesOf(reader.profileId)), reader.profileId, ...(await people.confirmedEmailsOf(reader.profileId))];
  }

  /** Whether a `readers` list lets the reader in: one of their ids is on it, or they are a super user. */
  canRead(readers: string[], ids: Set<string>, reader: Reader): boolean {
    return Boolean(reader?.isSuperUser) || readers.some((r) => ids.has(r));
  }

  /** Refuses (403) anyone but the venue's organisers and super users. */
  async requireOrganiser(venueId: string, reader: Viewer, people = this.#people): Promise<void> {
    if (reader.isSuperUser) return;
    if (!(await this.identities(reader, people)).has(organisersOf(venueId))) {
      throw new AppError('ForbiddenError', `Only the organisers of ${venueId} can do this`);
    }
  }
}

/**
 * What every venue service is built from: venue's repository, accounts' people and groups, the
 * readers rule and the clock; and the two ways to reach the tables: outside a transaction, or
 * inside one that spans venue's tables and accounts' groups.
 */
export abstract class VenuePart {
  protected readonly readers: Readers;
  readonly #repo: VenueRepository;
  readonly #people: People;
  readonly #now: () => number;

  constructor(deps: VenueDeps) {
    this.#repo = deps.repo;
    this.#people = deps.people;
    this.readers = deps.readers;
    this.#now = deps.now ?? Date.now;
  }

  protected now(): number {
    return this.#now();
  }

  protected repos(): Repos {
    return { people: this.#people, venues: this.#repo };
  }

  protected transaction<T>(work: (repos: Repos) => Promise<T>): Promise<T> {
    return this.#repo.transaction((venues, trx) => work({ people: this.#people.within(trx), venues }));
  }
}
