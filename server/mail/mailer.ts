import path from 'node:path';
import type { Knex } from 'knex';
import type { MailContent } from './messages.ts';
import type { MailBacklog, OutboxRepository, OutboxRow, OutboxState } from './outbox-repository.ts';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

/** A mail with its address and the name of its kind (`messages.ts`). */
export type Mail = MailContent & { to: string };

/**
 * Where a mail is written: the transaction of what it announces (an `AccountsRepository`, on the
 * database or on a transaction, has its `outbox`), so the mail and the token it carries, or the
 * change it reports, are written together or not at all.
 */
export interface OutboxWriter {
  outbox: OutboxRepository;
}

/**
 * Makes a mail when it is sent, from the `params` it was asked with, in `trx` (where it issues
 * the token the mail carries); null when there is nothing to send (the id has no account).
 */
export type Composer = (trx: Knex.Transaction, params: Record<string, unknown>) => Promise<Mail | null>;

/**
 * The outbox (`outbox.ts`): every mail is a row, and one worker of the install sends it after
 * the answer, so how long a mail takes (SMTP, the outbox folder) never shows in an answer's
 * timing, and a mail survives a crash or a mail server that refuses for a while.
 */
export interface Mailer {
  /** Writes a mail, on `on`: sent once `on`'s transaction has committed. */
  queue(on: OutboxWriter, mail: Mail): Promise<void>;
  /**
   * Writes a mail that the composer of `kind` makes when it is sent. For the forms that must
   * not tell who has an account: the request writes the same row whoever asked, and the lookup,
   * the token and the mail are made after the answer.
   */
  request(on: OutboxWriter, kind: string, params: Record<string, unknown>): Promise<void>;
  /** Registers the composer of the mails asked for with `request(…, kind, …)`. */
  composer(kind: string, compose: Composer): void;
  /** Starts waking up by itself (the server's processes; an admin command sends when it closes). */
  start(): void;
  /**
   * Resolves when no mail is due: every mail written so far has been sent, given up on, or waits
   * for a retry. After `timeoutMs` at the latest, if given (a shutdown does not wait forever).
   */
  settled(timeoutMs?: number): Promise<void>;
  backlog(): Promise<MailBacklog>;
  /** The operator's view and actions (`npm run admin -- mail …`). */
  list(states: OutboxState[], limit: number): Promise<OutboxRow[]>;
  retry(ids: number[] | 'all'): Promise<number>;
  purge(states: OutboxState[], olderThanMs: number): Promise<number>;
  /** The sweeper's: forgets sent mails after a week and failed ones after a month. */
  sweep(): Promise<void>;
  /**
   * Stops waking up, lets go of the worker's lease and closes the transport. A mail being sent
   * is waited for `waitMs` at most (5 s: a shutdown), or to its end (`Infinity`: an admin
   * command, whose process would otherwise finish the send with no database to record it in).
   */
  close(waitMs?: number): Promise<void>;
}

/** The mailers of this process by data folder, so tests can wait for the mail of a request. */
const byDataDir = new Map<string, Mailer>();

/** Resolves when the mailer of a data folder (in this process) has no mail due. */
export function mailSettled(dataDir: string): Promise<void> {
  return byDataDir.get(path.resolve(dataDir))?.settled() ?? Promise.resolve();
}

/** Makes `mailer` the one `mailSettled(dataDir)` waits for, until it closes. */
export function registerMailer(dataDir: string, mailer: Mailer): () => void {
  const key = path.resolve(dataDir);
  byDataDir.set(key, mailer);
  return () => {
    if (byDataDir.get(key) === mailer) byDataDir.delete(key);
  };
}
