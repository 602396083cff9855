import type { Logger } from 'pino';
import { deleteExpiredRateLimits, type Db } from '../db/knex.ts';
import { processHolder, releaseLease, takeLeaseFromStopped } from './leases.ts';
import type { Services } from './services.ts';

/** How often the sweeper wakes up in each process. */
export const SWEEP_INTERVAL_MS = 10 * 60 * 1000;
/**
 * How long a taken lease lasts. Its holder renews it at each of its sweeps, so it keeps it while
 * it runs; a holder that died without letting go is replaced at most this long after its last
 * sweep. Three intervals: a sweep may run long (many abandoned uploads) without another process
 * starting one alongside it, and machines' clocks may differ by far less.
 */
export const SWEEP_LEASE_MS = 3 * SWEEP_INTERVAL_MS;
const LEASE = 'sweeper';

/**
 * The periodic clean-up (abandoned chunked uploads, expired sign-in requests and tokens,
 * rotated-out refresh tokens past keeping, accounts whose deletion is due
 * (`accounts/account-deletion.ts`), sent and failed mail past keeping (`mail/outbox.ts`),
 * expired rate-limit counters), run by one process of the install at a time. Every process
 * wakes up every ten minutes and tries to take the `sweeper` lease, a row of the `leases` table
 * shared through the database; the process that has it sweeps and keeps it by renewing it, the
 * others do nothing. A holder that stopped without letting go (killed) is taken over at once by a
 * process of its kernel (`takeLeaseFromStopped`), by any other once its lease runs out. A row,
 * not PostgreSQL's session advisory lock: it works the same on both databases, and needs no connection held for the life of the process (a pooled connection
 * returned with the lock still on it would hand the lock to whatever query borrows it next).
 */
export class Sweeper {
  readonly #db: Db;
  readonly #services: Pick<Services, 'chunkedUploads' | 'oidc' | 'security' | 'sessions' | 'mfa' | 'passkeys' | 'accountDeletion' | 'mailer' | 'tus'>;
  readonly #logger: Logger;
  readonly #now: () => number;
  /** This process's name in the lease (`processHolder`): a successor on this kernel can tell it stopped. */
  readonly #holder = processHolder();
  #running: Promise<boolean> | null = null;
  #timer: NodeJS.Timeout | null = null;

  constructor(db: Db, services: Pick<Services, 'chunkedUploads' | 'oidc' | 'security' | 'sessions' | 'mfa' | 'passkeys' | 'accountDeletion' | 'mailer' | 'tus'>, logger: Logger, now: () => number) {
    this.#db = db;
    this.#services = services;
    this.#logger = logger;
    this.#now = now;
  }

  /** Wakes up every `SWEEP_INTERVAL_MS` until `stop`; never keeps the process alive. */
  start(): void {
    this.#timer = setInterval(() => void this.sweep(), SWEEP_INTERVAL_MS);
    this.#timer.unref();
  }

  /**
   * Sweeps if this process has (or takes) the lease; true when it swept. A sweep still running in
   * this process is waited for rather than started again.
   */
  sweep(): Promise<boolean> {
    this.#running ??= this.#sweepOnce().finally(() => {
      this.#running = null;
    });
    return this.#running;
  }

  async #sweepOnce(): Promise<boolean> {
    try {
      // A holder that stopped on this kernel (a crash, a restarted container) is taken over at
      // once, not half an hour later; one elsewhere, when its lease runs out.
      if (!(await takeLeaseFromStopped(this.#db, LEASE, this.#holder, this.#now(), SWEEP_LEASE_MS)).taken) return false;
    } catch (error) {
      this.#logger.error({ err: error }, 'the sweeper could not take its lease');
      return false;
    }
    // Each part on its own: one failing does not stop the others.
    const parts: Array<[string, () => Promise<unknown>]> = [
      ['upload sweep failed', () => this.#services.chunkedUploads.sweep()],
      ['tus sweep failed', () => this.#services.tus.sweep()],
      ['sign-in sweep failed', () => this.#services.oidc.sweep()],
      ['security-event sweep failed', () => this.#services.security.sweep()],
      ['session sweep failed', () => this.#services.sessions.sweep()],
      ['multi-factor sweep failed', () => this.#services.mfa.sweep()],
      ['passkey sweep failed', () => this.#services.passkeys.sweep()],
      ['account-deletion sweep failed', () => this.#services.accountDeletion.sweep()],
      ['mail sweep failed', () => this.#services.mailer.sweep()],
      ['rate-limit sweep failed', () => deleteExpiredRateLimits(this.#db, this.#now())],
    ];
    for (const [failure, part] of parts) {
      await part().catch((error: unknown) => this.#logger.error({ err: error }, failure));
    }
    return true;
  }

  /** Stops waking up, waits for a sweep under way, and lets go of the lease. */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#running;
    await releaseLease(this.#db, LEASE, this.#holder).catch((error: unknown) => this.#logger.warn({ err: error }, 'the sweeper could not let go of its lease'));
  }
}
