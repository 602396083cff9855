import { statSync } from 'node:fs';
import type { Logger } from 'pino';
import { openRateLimiterStore, type Db } from '../db/knex.ts';
import { ActivationService } from './accounts/activation.ts';
import { EmailService } from './accounts/emails.ts';
import { EmailChangeService } from './accounts/email-changes.ts';
import { AccountDeletionService } from './accounts/account-deletion.ts';
import { YourDataService, type PersonElsewhere } from './accounts/your-data.ts';
import type { Viewer } from './accounts/viewer.ts';
import { HumanVerifier } from './accounts/human-verification.ts';
import { ImpersonationService } from './accounts/impersonation.ts';
import { ModerationService } from './accounts/moderation.ts';
import { OneTimeTokens } from './accounts/one-time-tokens.ts';
import { DeviceCookies } from './accounts/device-cookies.ts';
import { OWASP_SCRYPT, PasswordHasher, TEST_SCRYPT } from './accounts/passwords.ts';
import { PasswordResetService } from './accounts/password-reset.ts';
import { AccountsRepository } from './accounts/repository.ts';
import type { AccountsCore } from './accounts/core.ts';
import type { AccountsDeps } from './accounts/service-base.ts';
import { ProfileService } from './accounts/profiles.ts';
import { ProfileEditor } from './accounts/profile-editor.ts';
import { SessionService } from './accounts/sessions.ts';
import { SecurityService } from './accounts/security.ts';
import { NewBrowserAlerts, NotMeService } from './accounts/sign-in-alerts.ts';
import { SignUpService } from './accounts/sign-up.ts';
import { SignInView } from './accounts/sign-in-view.ts';
import { loadSessionSecret, SessionTokens } from './accounts/session-tokens.ts';
import type { Config } from './config.ts';
import type { Mailer } from './mail/mailer.ts';
import { createMailer } from './mail/outbox.ts';
import { RateLimits } from './rate-limits.ts';
import { Directory } from './accounts/directory.ts';
import { CodeHasher } from './accounts/mfa/codes.ts';
import { MfaRepository } from './accounts/mfa/repository.ts';
import { SecondFactors } from './accounts/mfa/second-factor.ts';
import { MfaService } from './accounts/mfa/service.ts';
import { SignInService } from './accounts/sign-in.ts';
import { TOTP_ISSUER } from './accounts/mfa/totp.ts';
import { SecretBox } from './secrets.ts';
import { VenueRepository } from './venue/repository.ts';
import { AuthorConsoleService } from './venue/author-console.ts';
import { NoteService } from './venue/notes.ts';
import { Readers } from './venue/readers.ts';
import { VenueService } from './venue/venues.ts';
import { AttachmentsRepository } from './attachments/repository.ts';
import { DownloadsService } from './attachments/downloads.ts';
import { openFileStore } from './attachments/store/open.ts';
import { NO_METRICS, type Metrics } from './metrics/events.ts';
import { ChunkedUploadsService } from './attachments/chunked-uploads.ts';
import { UploadsService } from './attachments/uploads.ts';
import { TusService } from './attachments/tus.ts';
import { markThisProcess } from './processes.ts';
import { TusRepository } from './attachments/tus-repository.ts';
import { OidcRepository } from './oidc/repository.ts';
import { OidcService } from './oidc/service.ts';
import { PasskeyService } from './accounts/passkeys/ceremonies.ts';
import { PasskeysRepository } from './accounts/passkeys/repository.ts';
import { PasskeySignIn } from './accounts/passkeys/passwordless.ts';

/** Everything the procedures call, built once per process from the configuration. */
export interface Services {
  db: Db;
  mailer: Mailer;
  signUp: SignUpService;
  sessions: SessionService;
  profiles: ProfileService;
  /** Editing a profile (`accounts.updateProfile`, `POST /profiles`, the profile page). */
  profileEditor: ProfileEditor;
  activation: ActivationService;
  passwordReset: PasswordResetService;
  emails: EmailService;
  moderation: ModerationService;
  impersonation: ImpersonationService;
  security: SecurityService;
  /** "This was not me", the link of the mail on a sign-in from a new browser (`accounts/sign-in-alerts.ts`). */
  notMe: NotMeService;
  /** Signing in with a password and the second step; every sign-in's session opens there. */
  signIn: SignInService;
  /** The second factors a person manages, and re-authentication. */
  mfa: MfaService;
  venue: VenueService;
  notes: NoteService;
  authorConsole: AuthorConsoleService;
  /** Uploads, whole or in chunks: their checks, chunk arrivals, assembly, recovery at start and the sweep. */
  uploads: UploadsService;
  chunkedUploads: ChunkedUploadsService;
  /** Uploads through tus 1.0 (`/attachment/tus`), on the same pipeline (`attachments/tus.ts`). */
  tus: TusService;
  /** Reading stored files back (a note's, a revision's, a PDF by its address) and comparing two revisions. */
  downloads: DownloadsService;
  oidc: OidcService;
  /** Passkeys (WebAuthn): credentials and ceremonies, the `passkey` factor multi-factor sign-in asks (`accounts/mfa/passkey-factor.ts`). */
  passkeys: PasskeyService;
  /** Signing in with a passkey and no password. */
  passkeySignIn: PasskeySignIn;
  /** "Your data": the export of everything held about a person (`accounts/your-data.ts`). */
  yourData: YourDataService;
  /** Deleting one's own account after a grace period, and anonymising it (`accounts/account-deletion.ts`; the sweeper's). */
  accountDeletion: AccountDeletionService;
  /**
   * Lets go of what the services hold (the mail transport, the rate limiters' connection).
   * `sendMail: false`: mail due is left to the server's processes (an admin command that wrote no
   * mail must not take the mail lease and wait on a mail server). `mailWaitMs`: how long a mail
   * being sent is waited for (`Mailer.close`: 5 s by default, a server's shutdown, which leaves it
   * to the next process; `Infinity` for an admin command, whose process has nothing else to do).
   */
  close(opts?: { sendMail?: boolean; mailWaitMs?: number }): Promise<void>;
}

/**
 * The composition root: the only place services are wired to their dependencies. `now` is the
 * clock every service reads (tests hand in one they can move forward); `metrics`, what the
 * services count (`metrics/events.ts`; none by default: the admin command, tests without HTTP).
 */
export async function createServices(config: Config, db: Db, logger: Logger, now: () => number = Date.now, metrics: Metrics = NO_METRICS): Promise<Services> {
  const secret = await loadSessionSecret(config.sessionSecret, db, config.dataDir);
  // Before this process records any work as its own: what it leaves when it stops is then taken
  // over at once by the processes of other pid spaces of this kernel too (`processes.ts`).
  const unmark = markProcess(config.dataDir, logger);
  warnIfShared(config.dataDir, logger);
  try {
    return await wireServices(config, db, logger, now, metrics, secret, unmark);
  } catch (error) {
    // A start that failed holds no mark: the process may live on (a test, a retry).
    unmark();
    throw error;
  }
}

/** The services of `createServices`, once the process is marked; `unmark` is called by their `close`. */
async function wireServices(config: Config, db: Db, logger: Logger, now: () => number, metrics: Metrics, secret: string, unmark: () => void): Promise<Services> {
  // Every mail is a row of the outbox, sent by one worker of the install (`mail/outbox.ts`).
  const mailer = createMailer({ db, config, secret, logger, now, onDelivery: (outcome) => metrics.mailDelivery(outcome) });
  metrics.watchMailBacklog(() => mailer.backlog());
  const limiterStore = openRateLimiterStore(db);
  const deps: AccountsDeps = {
    repo: new AccountsRepository(db),
    hasher: new PasswordHasher(undefined, config.passwordHashCost === 'test' ? TEST_SCRYPT : OWASP_SCRYPT),
    tokens: new SessionTokens(secret, config.baseUrl, now),
    // Keys the hashes of 6-digit codes, so a copy of the table does not give them away.
    oneTime: new OneTimeTokens(`${secret}:codes`),
    verifier: new HumanVerifier(config.humanVerification, logger),
    devices: new DeviceCookies(secret),
    limits: new RateLimits(limiterStore, metrics),
    mailer,
    config,
    logger,
    metrics,
    now,
  };
  const profiles = new ProfileService(deps);
  const accounts: AccountsCore = { signUp: new SignUpService(deps), sessions: new SessionService(deps, profiles), profiles };
  const passkeysRepository = new PasskeysRepository(db);
  const passkeys = new PasskeyService({ passkeys: passkeysRepository, accounts: deps.repo, settings: config.webauthn, logger, now });
  const mfaRepository = new MfaRepository(db);
  const factorDeps = {
    mfa: mfaRepository,
    passkeys,
    // TOTP secrets at rest: MFA_ENCRYPTION_KEY, or a key derived from the session secret.
    box: new SecretBox({ configuredKey: config.mfaEncryptionKey, sessionSecret: secret }),
    codes: new CodeHasher(`${secret}:mfa-codes`),
  };
  const factors = new SecondFactors(deps, factorDeps);
  const mfa = new MfaService(deps, { ...factorDeps, factors, sessions: accounts.sessions, issuer: TOTP_ISSUER });
  const signIn = new SignInService(deps, { sessions: accounts.sessions, factors, mfa: mfaRepository, passkeys, alerts: new NewBrowserAlerts(deps, mfaRepository) });
  // Areas own their tables and ask each other through the small views they declare: venues ask
  // accounts about people and groups, and attachments about who uploaded a file; attachments ask
  // venues about invitations and who may read a note.
  const attachmentsRepository = new AttachmentsRepository(db);
  const people = new Directory(db);
  const venueDeps = { repo: new VenueRepository(db), people, readers: new Readers(people), now };
  const venue = new VenueService(venueDeps);
  const notes = new NoteService({ ...venueDeps, uploads: attachmentsRepository });
  const store = await openFileStore(config.storage, config.dataDir);
  await store.init();
  // The provider's login and consent pages are at `signInPagesUrl`: its own under BASE_URL, or a
  // frontend's when WEB_URL names one (`config.ts`).
  const oidcConfig = { ...config, webUrl: config.signInPagesUrl };
  const oidc = new OidcService({ repo: new OidcRepository(db), accounts: new SignInView(deps.repo, mfaRepository, now), config: oidcConfig, csrfKey: `${secret}:oidc-csrf`, log: logger, limits: deps.limits, metrics, now });
  await oidc.keys.ensureKey();
  const security = new SecurityService(deps, accounts, mfaRepository);
  // A person's own email changes: the emails page's procedures, and a profile edit's (`profile-editor.ts`).
  const emailChanges = new EmailChangeService(deps, accounts);
  const uploads = new UploadsService({ repo: attachmentsRepository, store, venues: venue, notes, verifier: deps.verifier, config, metrics, now });
  /** Every application of the person: its consent withdrawn (its tokens end, it is told by back-channel logout). */
  const forgetApplications = async (profileId: string) => {
    const person = personOnly(profileId);
    for (const consent of await oidc.consents(person)) await oidc.withdrawConsent(person, consent.clientId);
  };
  // What other areas hold about a person, for their data export and their account's deletion.
  const elsewhere: PersonElsewhere = {
    sessions: (viewer) => security.sessions(viewer),
    applications: (viewer) => oidc.consents(viewer),
    notes: async (ids) => ({
      signed: (await venueDeps.repo.findNotes({ signedBy: ids })).map((note) => note.id),
      authored: (await venueDeps.repo.findNotes({ author: ids })).map((note) => note.id),
    }),
    uploads: (profileId) => attachmentsRepository.uploadsOf(profileId),
    factors: (viewer) => mfa.status(viewer),
    passkeys: async (profileId) => (await passkeys.list(profileId)).map(({ name, createdAt, lastUsedAt }) => ({ name, createdAt, lastUsedAt })),
    forgetApplications,
  };
  return {
    db,
    mailer,
    ...accounts,
    yourData: new YourDataService(deps, accounts, elsewhere),
    accountDeletion: new AccountDeletionService(deps, accounts, elsewhere, (sessionId) => mfaRepository.reauthAt(sessionId)),
    activation: new ActivationService(deps, accounts),
    profileEditor: new ProfileEditor(deps, accounts, emailChanges),
    passwordReset: new PasswordResetService(deps, accounts),
    emails: new EmailService(deps, accounts, async (profileId) => (await mfa.methodsOf(profileId)).length > 0, emailChanges),
    moderation: new ModerationService(deps, accounts),
    impersonation: new ImpersonationService(deps, accounts),
    security,
    notMe: new NotMeService(deps, accounts, mfaRepository, passkeysRepository, { revokeAll: forgetApplications }),
    signIn,
    mfa,
    venue,
    notes,
    authorConsole: new AuthorConsoleService({ ...venueDeps, venues: venue }),
    uploads,
    chunkedUploads: new ChunkedUploadsService({ repo: attachmentsRepository, store, uploads, notes, config, logger, metrics, now }),
    tus: new TusService({ db, repo: new TusRepository(db), uploads, notes, store, config, logger, metrics, now }),
    downloads: new DownloadsService({ repo: attachmentsRepository, store, venues: venue, notes, config }),
    oidc,
    passkeys,
    passkeySignIn: new PasskeySignIn(deps, passkeys, signIn),
    async close(opts = {}) {
      try {
        // No round of back-channel logout starts after this, and the one under way ends first.
        await oidc.logouts.stop();
        // Mail due now goes out before the transport closes; what cannot (a mail server that does
        // not answer) waits in the outbox for another process or the next start.
        if (opts.sendMail ?? true) await mailer.settled(10_000);
        await mailer.close(opts.mailWaitMs);
        await limiterStore.close();
      } finally {
        unmark();
      }
    },
  };
}

/**
 * A warning when other users of this machine may enter the data folder: it holds the SQLite
 * file (password hashes, the session secret, signing keys), uploaded files and the mail outbox.
 * A folder the service makes is its owner's alone; one made before (or by an image) may not be.
 * Its group may be meant to read it (a backup user), so only others' access is spoken of.
 */
function warnIfShared(dataDir: string, logger: Logger): void {
  const mode = statSync(dataDir, { throwIfNoEntry: false })?.mode;
  if (mode !== undefined && (mode & 0o007) !== 0) {
    logger.warn({ dataDir, mode: `0${(mode & 0o777).toString(8)}` }, 'the data folder can be entered by every user of this machine, and it holds password hashes, the session secret and signing keys: chmod o-rwx it');
  }
}

/** `markThisProcess`, or, where the data folder cannot hold marks, a warning and none. */
function markProcess(dataDir: string, logger: Logger): () => void {
  try {
    return markThisProcess(dataDir);
  } catch (error) {
    logger.warn({ err: error, dataDir }, 'cannot mark this process in the data folder: what it holds when it stops is taken over only when its leases run out (15-30 s), and it cannot take over at once what processes of other pid spaces leave');
    return () => {};
  }
}

/**
 * A person as the sign-in provider's consent calls read them (by profile id alone), for the
 * sweeper's deletion of an account, which acts for no session.
 */
function personOnly(profileId: string): Viewer {
  return { profileId, sessionId: '', loginEmail: '', tokenVersion: 0, isSuperUser: false, isModerator: false, mayAuthor: false, impersonator: null, parentSessionId: null, readOnly: false, authTime: 0, accessExpiresAt: 0 };
}
