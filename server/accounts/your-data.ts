import { AppError, type DataExport, type MfaStatus, type OidcConsent, type SessionInfo } from '../../shared/index.ts';
import { AccountsPart, type AccountsCore } from './core.ts';
import { type AccountsDeps } from './service-base.ts';
import { preferredEmail } from './profiles.ts';
import type { Viewer } from './viewer.ts';

/** How many audit entries about the person the export holds (every one the log keeps, in practice). */
const ACTIVITY_EXPORTED = 10_000;

/**
 * What other areas hold about a person, asked by the export and the deletion (wired in
 * `services.ts`): the applications they let sign them in (oidc), the notes they signed or
 * authored (venue), the files they uploaded (attachments), their factors and passkeys (mfa).
 */
export interface PersonElsewhere {
  applications(viewer: Viewer): Promise<OidcConsent[]>;
  /** Ids of the notes signed by, or with an author among, these ids (usernames and confirmed emails). */
  notes(ids: string[]): Promise<{ signed: string[]; authored: string[] }>;
  uploads(profileId: string): Promise<Array<{ url: string; invitation: string; field: string; size: number; createdAt: number }>>;
  factors(viewer: Viewer): Promise<MfaStatus>;
  /** The person's live sessions as the security page lists them (`security.ts`). */
  sessions(viewer: Viewer): Promise<SessionInfo[]>;
  passkeys(profileId: string): Promise<Array<{ name: string; createdAt: number; lastUsedAt: number | null }>>;
  /** Every application's consent withdrawn and its tokens ended; each is told by back-channel logout. */
  forgetApplications(profileId: string): Promise<void>;
}

/**
 * "Your data": everything the service holds about the person, as one JSON document. Never a
 * secret or a hash of one: the profile as its owner sees it (whether it has a password, not the
 * hash), sessions as the security page lists them (browser, address, times; no token), the
 * factors that are on (not their keys or codes), passkeys by name (not their keys or ids).
 */
export class YourDataService extends AccountsPart {
  readonly #elsewhere: PersonElsewhere;

  constructor(deps: AccountsDeps, core: AccountsCore, elsewhere: PersonElsewhere) {
    super(deps, core);
    this.#elsewhere = elsewhere;
  }

  /** `GET /user/export`, `accounts.exportData`: the person's own data; an impersonator gets none of it. */
  async export(viewer: Viewer): Promise<DataExport> {
    if (viewer.impersonator) throw new AppError('ForbiddenError', 'The data of an account cannot be exported while impersonating');
    const repo = this.deps.repo;
    const now = this.now();
    const profile = await repo.profiles.find(viewer.profileId);
    if (!profile) throw new AppError('NotFoundError', `Profile Not Found: ${viewer.profileId}`);
    const { emails, usernames } = await repo.emails.emailsAndUsernamesOf(profile.id);
    const preferred = preferredEmail(profile, emails);
    const confirmed = emails.filter((e) => e.confirmed).map((e) => e.email);
    const [presented, sessions, audit, applications, notes, uploads, factors, passkeys, deletion] = await Promise.all([
      this.core.profiles.present(profile, true, true),
      this.#elsewhere.sessions(viewer),
      repo.settings.auditOf(profile.id, ACTIVITY_EXPORTED),
      this.#elsewhere.applications(viewer),
      this.#elsewhere.notes([...new Set([profile.id, ...usernames, ...confirmed])]),
      this.#elsewhere.uploads(profile.id),
      this.#elsewhere.factors(viewer),
      this.#elsewhere.passkeys(profile.id),
      repo.deletions.pending(profile.id),
    ]);
    return {
      exportedAt: now,
      profile: presented,
      emails: emails.map((e) => ({ email: e.email, confirmed: e.confirmed, preferred: e.email === preferred })),
      usernames,
      sessions,
      applications,
      activity: audit.map((entry) => ({ action: entry.action, at: entry.at, actor: entry.actor, ...(entry.details ? { details: entry.details } : {}) })),
      notes,
      uploads,
      factors,
      passkeys,
      deletion: { dueAt: deletion?.dueAt ?? null },
    };
  }
}
