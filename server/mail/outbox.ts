/**
 * The outbox: mail that is never lost. Every mail is a row of `mail_outbox`, written in the
 * transaction of what it announces (`Mailer.queue`) or asked for with the same row whoever asked
 * (`Mailer.request`, composed later). One worker of the install at a time (the `mail` lease, as
 * the sweeper's) sends the rows after the answers, in the order they were written:
 *
 * - an attempt is counted, with when the next one is due, before it is made: a process killed
 *   while sending leaves a row that is tried again at that time, by whichever process then holds
 *   the lease (a restarted process on the same kernel takes the lease of its dead predecessor
 *   at once, `processes.ts`);
 * - a temporary refusal (a 4xx reply) is tried again with a doubling wait (5 s, 10 s, … at most
 *   5 min) for a day; a permanent one (5xx), or a day of temporary ones, marks the row failed;
 * - no answer at all (the mail server is down, the outbox folder's disk is full) makes every due
 *   mail wait, and the first mail that goes through again makes them all due at once;
 * - delivery is at least once: a crash between a mail server's acceptance and the row's marking
 *   sends the mail again, with the same `Message-ID`, which mail clients show once. The outbox
 *   folder checks for the row's file first, so there it is exactly once.
 *
 * The text of a waiting mail holds links and codes: it is sealed (AES-256-GCM, a key derived
 * from the session secret, bound to the Message-ID) and dropped once sent.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { ZodError } from 'zod';
import type { Db } from '../../db/knex.ts';
import type { Config } from '../config.ts';
import { SecretBox } from '../secrets.ts';
import { processHolder, releaseLease, takeLease, takeLeaseFromStopped } from '../leases.ts';
import { registerMailer, type Composer, type Mail, type Mailer, type OutboxWriter } from './mailer.ts';
import { OutboxRepository, type OutboxRow, type OutboxState } from './outbox-repository.ts';
import { DeliveryError, outboxFolderTransport, smtpTransport, type Transport } from './transport.ts';

export const MAIL_LEASE = 'mail';
/** The worker's lease lasts this long, renewed every `HEARTBEAT_MS` while it works. */
const LEASE_MS = 30_000;
const HEARTBEAT_MS = 10_000;
/** How often a process looks for mail due that it did not write (another process's, a retry's). */
const POLL_MS = 2_000;
const FIRST_RETRY_MS = 5_000;
const LONGEST_RETRY_MS = 5 * 60_000;
/** A mail refused temporarily for a day is given up on. */
export const GIVE_UP_MS = 24 * 60 * 60_000;
const SENT_KEPT_MS = 7 * 24 * 60 * 60_000;
const FAILED_KEPT_MS = 30 * 24 * 60 * 60_000;
/** How long closing waits for the mail being sent. */
const CLOSE_WAIT_MS = 5_000;
/** How many due rows the worker reads at once. */
const BATCH = 20;
/**
 * How long an attempt may take before the mail may be tried again by anyone: more than an SMTP
 * attempt's deadline (`SMTP_ATTEMPT_MS`, 60 s, at which its connection is closed), so a mail still
 * being sent by a worker that lost its lease is not sent a second time alongside it.
 */
const ATTEMPT_BUDGET_MS = 90_000;

/** The wait before attempt `attempts + 1`: 5 s doubling to at most 5 min, ±10 % so workers do not all knock at once. */
export function retryDelay(attempts: number): number {
  const base = Math.min(LONGEST_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.max(0, attempts - 1));
  return Math.round(base * (0.9 + Math.random() * 0.2));
}

/** What became of one attempt, for the metrics. */
export type DeliveryOutcome = 'sent' | 'retry' | 'failed';

export interface OutboxOptions {
  db: Db;
  transport: Transport;
  /** The session secret: the key of the sealed texts is derived from it. */
  secret: string;
  /** The host in every Message-ID (`BASE_URL`'s). */
  domain: string;
  logger: Logger;
  now: () => number;
  onDelivery?: (outcome: DeliveryOutcome) => void;
}

export class Outbox implements Mailer {
  readonly #db: Db;
  readonly #repo: OutboxRepository;
  readonly #transport: Transport;
  readonly #box: SecretBox;
  readonly #domain: string;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #onDelivery: (outcome: DeliveryOutcome) => void;
  readonly #composers = new Map<string, Composer>();
  /** This process's name in the lease: its machine and pid, so a successor can tell it is gone. */
  readonly #holder = processHolder();
  #running: Promise<boolean> | null = null;
  #again = false;
  #closed = false;
  #poll: NodeJS.Timeout | null = null;
  #retryTimer: NodeJS.Timeout | null = null;
  /** The last attempt found no mail server: the next mail that goes through makes every waiting one due. */
  #wasUnreachable = false;
  readonly #unregister: () => void;

  constructor(opts: OutboxOptions & { dataDir: string }) {
    this.#db = opts.db;
    this.#repo = new OutboxRepository(opts.db);
    this.#transport = opts.transport;
    this.#box = new SecretBox({ sessionSecret: opts.secret, purpose: { salt: 'mail-at-rest', info: 'outbox texts, AES-256-GCM' } });
    this.#domain = opts.domain;
    this.#logger = opts.logger;
    this.#now = opts.now;
    this.#onDelivery = opts.onDelivery ?? (() => undefined);
    this.#unregister = registerMailer(opts.dataDir, this);
  }

  async queue(on: OutboxWriter, mail: Mail): Promise<void> {
    const now = this.#now();
    const messageId = this.#newMessageId();
    await on.outbox.insert({ messageId, kind: mail.kind, state: 'pending', to: mail.to, subject: mail.subject, body: this.#box.seal(mail.text, messageId), now, giveUpAt: now + GIVE_UP_MS });
    this.#wakeAfter(on.outbox.knex);
  }

  async request(on: OutboxWriter, kind: string, params: Record<string, unknown>): Promise<void> {
    const now = this.#now();
    await on.outbox.insert({ messageId: this.#newMessageId(), kind, state: 'compose', params, now, giveUpAt: now + GIVE_UP_MS });
    this.#wakeAfter(on.outbox.knex);
  }

  composer(kind: string, compose: Composer): void {
    this.#composers.set(kind, compose);
  }

  start(): void {
    if (this.#closed || this.#poll) return;
    this.#poll = setInterval(() => void this.#pollOnce(), POLL_MS);
    this.#poll.unref();
    this.#wake();
  }

  async settled(timeoutMs?: number): Promise<void> {
    const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
    for (;;) {
      // A run under way may hold a mail it has claimed (not due any more, not sent yet): wait for
      // it, as long as the deadline allows.
      while (this.#running && Date.now() < deadline) await this.#runOrTimeout(deadline - Date.now());
      const waiting = this.#running !== null || (await this.#repo.due(this.#now(), 1)).length > 0;
      if (!waiting) return;
      if (this.#running && Date.now() < deadline) continue;
      if (Date.now() >= deadline) {
        this.#logger.warn({ backlog: await this.#repo.backlog(this.#now()) }, 'mail still waits in the outbox: another process, or the next start, sends it');
        return;
      }
      this.#wake();
      // Another process has the lease: it sends what is due; look again shortly.
      if (!(await this.#running)) await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  backlog() {
    return this.#repo.backlog(this.#now());
  }

  list(states: OutboxState[], limit: number): Promise<OutboxRow[]> {
    return this.#repo.list(states, limit);
  }

  async retry(ids: number[] | 'all'): Promise<number> {
    const now = this.#now();
    const count = await this.#repo.retry(ids, now, now + GIVE_UP_MS);
    this.#wake();
    return count;
  }

  purge(states: OutboxState[], olderThanMs: number): Promise<number> {
    return this.#repo.purge(states, this.#now() - olderThanMs);
  }

  async sweep(): Promise<void> {
    const now = this.#now();
    await this.#repo.purge(['sent'], now - SENT_KEPT_MS);
    await this.#repo.purge(['failed'], now - FAILED_KEPT_MS);
  }

  async close(waitMs = CLOSE_WAIT_MS): Promise<void> {
    this.#closed = true;
    if (this.#poll) clearInterval(this.#poll);
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    // The run stops after the mail it is sending; a mail server that does not answer holds the
    // shutdown no longer than this (the mail is then sent again by the next process: its Message-ID
    // is the same). `Infinity` waits for the attempt's own deadline (`SMTP_ATTEMPT_MS`) at most.
    await this.#runOrTimeout(waitMs);
    this.#unregister();
    this.#transport.close();
  }

  /** The run under way (if any), or `ms` passing, whichever comes first. */
  async #runOrTimeout(ms: number): Promise<void> {
    const running = this.#running;
    if (!running) return;
    if (ms === Infinity) {
      await running;
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([running, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
  }

  #newMessageId(): string {
    return `<${randomUUID()}@${this.#domain}>`;
  }

  /** Wakes the worker once `knex`'s transaction has committed (at once on the database itself). */
  #wakeAfter(knex: Knex): void {
    if (knex.isTransaction) (knex as Knex.Transaction).executionPromise.then(() => this.#wake(), () => undefined);
    else this.#wake();
  }

  #wake(): void {
    if (this.#closed) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#run().finally(() => {
      this.#running = null;
      if (this.#again) {
        this.#again = false;
        this.#wake();
      }
    });
  }

  async #pollOnce(): Promise<void> {
    try {
      const next = await this.#repo.nextDue();
      if (next !== null && next <= this.#now()) this.#wake();
    } catch (error) {
      this.#logger.error({ err: error }, 'the outbox could not be read');
    }
  }

  /** Sends what is due if this process has (or takes) the lease; true when it had it. */
  async #run(): Promise<boolean> {
    try {
      if (!(await this.#takeLease())) return false;
    } catch (error) {
      this.#logger.error({ err: error }, 'the mail worker could not take its lease');
      return false;
    }
    // A renewal that fails (the lease went to another process, the database is away) stops the run.
    let held = true;
    const heartbeat = setInterval(() => {
      takeLease(this.#db, MAIL_LEASE, this.#holder, this.#now(), LEASE_MS).then(
        (kept) => (held &&= kept),
        () => (held = false),
      );
    }, HEARTBEAT_MS);
    heartbeat.unref();
    try {
      let more = true;
      while (more && held && !this.#closed) {
        const rows = await this.#repo.due(this.#now(), BATCH);
        more = rows.length === BATCH;
        for (const row of rows) {
          // Closing stops the run after the mail it is sending, not after its batch.
          if (!held || this.#closed || (await this.#attempt(row)) === 'stop') {
            more = false;
            break;
          }
        }
      }
    } catch (error) {
      this.#logger.error({ err: error }, 'the mail worker stopped on an error; it starts again at its next wake-up');
    } finally {
      clearInterval(heartbeat);
      await releaseLease(this.#db, MAIL_LEASE, this.#holder).catch(() => undefined);
      await this.#scheduleRetry();
    }
    return true;
  }

  /**
   * The lease, or the lease of a process of this kernel that died holding it (at once, not when
   * it runs out). A predecessor that died holding it may have died mid-attempt: its mails, held
   * for `ATTEMPT_BUDGET_MS` against a second send alongside, are due at once, as nothing sends them.
   */
  async #takeLease(): Promise<boolean> {
    const now = this.#now();
    const { taken, fromStopped } = await takeLeaseFromStopped(this.#db, MAIL_LEASE, this.#holder, now, LEASE_MS);
    if (fromStopped) await this.#repo.dueNow(now);
    return taken;
  }

  /** Wakes up when the soonest retry is due, if that is before the next poll would notice. */
  async #scheduleRetry(): Promise<void> {
    if (this.#closed) return;
    const next = await this.#repo.nextDue().catch(() => null);
    if (next === null) return;
    const wait = next - this.#now();
    if (wait >= POLL_MS && this.#poll) return;
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    this.#retryTimer = setTimeout(() => this.#wake(), Math.max(0, wait));
    this.#retryTimer.unref();
  }

  /** One attempt at one row; 'stop' when no mail server answers (every due mail then waits). */
  async #attempt(found: OutboxRow): Promise<'next' | 'stop'> {
    let row = found;
    if (row.state === 'compose') {
      const composed = await this.#compose(row);
      if (!composed) return 'next';
      row = composed;
    }
    const now = this.#now();
    const attempts = row.attempts + 1;
    if (!(await this.#repo.claim(row, now + ATTEMPT_BUDGET_MS))) return 'next';
    const text = row.body === null ? null : this.#box.open(row.body, row.messageId);
    if (text === null || row.to === null || row.subject === null) {
      return this.#fail(row, 'the text does not decrypt (was the session secret changed?)');
    }
    try {
      await this.#transport.deliver({ id: row.id, createdAt: row.createdAt, messageId: row.messageId, to: row.to, subject: row.subject, text });
    } catch (error) {
      const failure = error instanceof DeliveryError ? error : new DeliveryError('temporary', (error as Error)?.name ?? 'Error');
      if (failure.kind === 'permanent' || now >= row.giveUpAt) return this.#fail(row, failure.message);
      await this.#repo.deferred(row.id, failure.message, now + retryDelay(attempts));
      this.#onDelivery('retry');
      this.#logger.warn({ mail: row.id, kind: row.kind, attempts, reason: failure.message, transport: this.#transport.name }, 'a mail was not sent: it is tried again later');
      if (failure.kind !== 'unreachable') return 'next';
      this.#wasUnreachable = true;
      await this.#repo.deferAllDue(now, now + retryDelay(attempts));
      return 'stop';
    }
    await this.#repo.sent(row.id, this.#now());
    this.#onDelivery('sent');
    this.#logger.info({ mail: row.id, kind: row.kind, transport: this.#transport.name }, 'mail sent');
    if (this.#wasUnreachable) {
      this.#wasUnreachable = false;
      await this.#repo.dueNow(this.#now());
    }
    return 'next';
  }

  async #fail(row: OutboxRow, reason: string): Promise<'next'> {
    await this.#repo.failed(row.id, reason);
    this.#onDelivery('failed');
    this.#logger.error({ mail: row.id, kind: row.kind, reason }, 'a mail was given up on: `npm run admin -- mail list` shows it');
    return 'next';
  }

  /**
   * Makes the mail of a `compose` row with its kind's composer, in one transaction with what the
   * composer writes (the token the mail carries). Null when there is nothing to send (the row is
   * then gone) or it failed (the row waits for its next attempt).
   */
  async #compose(row: OutboxRow): Promise<OutboxRow | null> {
    const composer = this.#composers.get(row.kind);
    // A newer process's kind of mail (a rolling upgrade): left for a process that composes it.
    if (!composer) return this.#composeLater(row, `no composer here for mails of kind ${row.kind}`, false);
    try {
      return await this.#db.transaction(async (trx) => {
        const repo = new OutboxRepository(trx);
        const fresh = await repo.find(row.id);
        if (!fresh || fresh.state !== 'compose') return null;
        const mail = await composer(trx, fresh.params ?? {});
        if (!mail) {
          await repo.remove(row.id);
          return null;
        }
        const body = this.#box.seal(mail.text, fresh.messageId);
        await repo.composed(row.id, { to: mail.to, subject: mail.subject, body });
        return { ...fresh, state: 'pending' as const, to: mail.to, subject: mail.subject, body, params: null };
      });
    } catch (error) {
      this.#logger.error({ err: error, mail: row.id, kind: row.kind }, 'a mail could not be composed');
      // Parameters no composer can read never will be.
      return this.#composeLater(row, (error as Error)?.name ?? 'Error', error instanceof ZodError);
    }
  }

  /** A mail not composed now: tried again later, or given up on (for good, or after a day). */
  async #composeLater(row: OutboxRow, reason: string, forGood: boolean): Promise<null> {
    const now = this.#now();
    if (forGood || now >= row.giveUpAt) {
      await this.#fail(row, reason);
      return null;
    }
    const attempts = row.attempts + 1;
    if (await this.#repo.claim(row, now + retryDelay(attempts))) await this.#repo.deferred(row.id, reason, now + retryDelay(attempts));
    return null;
  }
}

/**
 * The mailer of a process: the outbox, sending over SMTP when `SMTP_URL` is set, otherwise to
 * `$DATA_DIR/outbox/`. `outboxOnly`: the outbox folder although the database is shared with
 * processes that may be on other machines (the operator set `MAIL_OUTBOX=on`), said at start.
 */
export function createMailer(opts: {
  db: Db;
  config: Pick<Config, 'smtpUrl' | 'outboxOnly' | 'mailFrom' | 'dataDir' | 'baseUrl'>;
  secret: string;
  logger: Logger;
  now: () => number;
  onDelivery?: (outcome: DeliveryOutcome) => void;
}): Outbox {
  const { config } = opts;
  if (config.outboxOnly) {
    opts.logger.warn(
      { outbox: `${config.dataDir}/outbox` },
      'mail is written to this machine\'s outbox although the database is shared (MAIL_OUTBOX=on): the process that holds the mail lease writes every mail to its own machine\'s outbox. Set SMTP_URL to send it',
    );
  }
  const transport = config.smtpUrl ? smtpTransport(config.smtpUrl, config.mailFrom) : outboxFolderTransport(config.dataDir, config.mailFrom);
  return new Outbox({ ...opts, transport, domain: new URL(config.baseUrl).hostname, dataDir: config.dataDir });
}
