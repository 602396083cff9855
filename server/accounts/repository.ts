/**
 * The accounts area's SQL, one repository per concern, each in `repository/` with its tables' row
 * types and mappers: profiles; emails and usernames; groups; sessions; one-time tokens; settings,
 * institutions and the audit log. `AccountsRepository` holds one of each, all on the same Knex, so
 * a service asks `repo.sessions.find(id)` and a transaction hands its work the same shape on the
 * transaction (`repo.transaction(async (trx) => trx.profiles.update(…))`): no method is written
 * twice, and a caller names the tables it touches.
 */
import type { Knex } from 'knex';
import { DeletionsRepository } from './repository/deletions.ts';
import { EmailsRepository } from './repository/emails.ts';
import { GroupsRepository } from './repository/groups.ts';
import { ProfilesRepository } from './repository/profiles.ts';
import { SessionsRepository } from './repository/sessions.ts';
import { SettingsRepository } from './repository/settings.ts';
import { TokensRepository } from './repository/tokens.ts';
import { OutboxRepository } from '../mail/outbox-repository.ts';

export type { EmailRecord, EmailsAndUsernames, SearchedProfiles } from './repository/emails.ts';
export type { GroupRecord } from './repository/groups.ts';
export type { ProfileRecord } from './repository/profiles.ts';
export type { SessionRecord } from './repository/sessions.ts';
export type { AuditEntry } from './repository/settings.ts';
export type { TokenKind, TokenRecord } from './repository/tokens.ts';
export { normaliseEmail, normaliseId } from './ids.ts';

/** Every accounts repository on one Knex (or one transaction). */
export class AccountsRepository {
  readonly #db: Knex;
  readonly profiles: ProfilesRepository;
  readonly emails: EmailsRepository;
  readonly groups: GroupsRepository;
  readonly sessions: SessionsRepository;
  readonly tokens: TokensRepository;
  readonly settings: SettingsRepository;
  /** A person's request to delete their account, and anonymising it when due (`account-deletion.ts`). */
  readonly deletions: DeletionsRepository;
  /** The mail the accounts send, written with what it announces (`mail/outbox.ts`). */
  readonly outbox: OutboxRepository;

  constructor(db: Knex) {
    this.#db = db;
    this.profiles = new ProfilesRepository(db);
    this.emails = new EmailsRepository(db);
    this.groups = new GroupsRepository(db);
    this.sessions = new SessionsRepository(db);
    this.tokens = new TokensRepository(db);
    this.settings = new SettingsRepository(db);
    this.deletions = new DeletionsRepository(db);
    this.outbox = new OutboxRepository(db);
  }

  /** The same repositories inside a transaction. */
  with(trx: Knex.Transaction): AccountsRepository {
    return new AccountsRepository(trx);
  }

  transaction<T>(work: (repo: AccountsRepository) => Promise<T>): Promise<T> {
    return this.#db.transaction((trx) => work(this.with(trx)));
  }
}
