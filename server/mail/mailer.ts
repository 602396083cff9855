import { randomUUID } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Transporter } from 'nodemailer';
import type { Logger } from 'pino';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  /** Sends now; the caller waits for the transport. */
  send(message: MailMessage): Promise<void>;
  /**
   * Sends after the request has been answered: how long a mail takes (SMTP, the outbox) must
   * never show in an answer's timing, or a form that mails only known addresses would tell
   * who has an account. Failures are logged (never the text, which holds links and codes).
   */
  post(message: MailMessage): void;
  /**
   * Runs work that ends in a mail (issuing its token, then sending) after the answer, one job
   * at a time, so the answer takes the same time whether the work found anything to do.
   */
  later(job: () => Promise<void>): void;
  /**
   * Resolves when every job handed to `post` and `later` so far has finished, or after
   * `timeoutMs` if given (a mail server that does not answer must not hold a shutdown forever).
   */
  settled(timeoutMs?: number): Promise<void>;
  close(): void;
}

/** At most this many jobs wait; past it a job is dropped and logged (the rate limits keep far below it). */
const MAX_PENDING_JOBS = 10_000;

/** The mailers of this process by data folder, so tests can wait for the mail of a request. */
const byDataDir = new Map<string, Mailer>();

/** Resolves when the mailer of a data folder (in this process) has sent everything handed to it. */
export function mailSettled(dataDir: string): Promise<void> {
  return byDataDir.get(path.resolve(dataDir))?.settled() ?? Promise.resolve();
}

/** Adds the after-the-answer queue to a mailer's `send`. */
function withQueue(base: Pick<Mailer, 'send' | 'close'>, logger: Logger, dataDir: string): Mailer {
  let tail: Promise<void> = Promise.resolve();
  let pending = 0;
  const key = path.resolve(dataDir);
  const later = (job: () => Promise<void>): void => {
    if (pending >= MAX_PENDING_JOBS) {
      logger.warn({ pending }, 'the mail queue is full: a mail was dropped');
      return;
    }
    pending += 1;
    tail = tail
      .then(job)
      .catch((error: unknown) => {
        logger.error({ errorName: (error as Error)?.name, errorMessage: (error as Error)?.message }, 'a queued mail failed');
      })
      .finally(() => {
        pending -= 1;
      });
  };
  const mailer: Mailer = {
    send: base.send,
    post: (message) => later(() => base.send(message)),
    later,
    settled: async (timeoutMs) => {
      const drained = (async () => {
        // Jobs may queue more jobs; wait until the tail stops moving.
        let seen: Promise<void>;
        do {
          seen = tail;
          await seen;
        } while (seen !== tail);
      })();
      if (timeoutMs === undefined) return drained;
      let timer: NodeJS.Timeout | undefined;
      const expired = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          if (pending > 0) logger.warn({ pending }, 'queued mail was not sent before shutdown');
          resolve();
        }, timeoutMs);
      });
      await Promise.race([drained, expired]);
      clearTimeout(timer);
    },
    close() {
      if (byDataDir.get(key) === mailer) byDataDir.delete(key);
      base.close();
    },
  };
  byDataDir.set(key, mailer);
  return mailer;
}

/**
 * A nodemailer transport made on first use: nodemailer (and the fetch implementation it loads)
 * adds about 9 MB to a process's resident memory (measured with `process.memoryUsage`, loading it
 * and not), which a server that sends no mail need not hold. It connects only to send anyway.
 */
function lazyTransport(options: Parameters<typeof import('nodemailer').createTransport>[0]): { get(): Promise<Transporter>; close(): void } {
  let made: Promise<Transporter> | null = null;
  return {
    get: () => (made ??= import('nodemailer').then((nodemailer) => nodemailer.default.createTransport(options))),
    close: () => void made?.then((transport) => transport.close(), () => undefined),
  };
}

/**
 * Sends mail over SMTP when `SMTP_URL` is set. Otherwise every message is written as an
 * `.eml` file under `$DATA_DIR/outbox/`, named so that a directory listing is in send order;
 * each file appears whole (written aside, then renamed), so a reader never sees half a message.
 * `outboxOnly`: the outbox although the database is shared with processes that may be on other
 * machines (the operator set `MAIL_OUTBOX=on`), said in a warning at start.
 */
export function createMailer(opts: { smtpUrl: string | undefined; outboxOnly?: boolean; from: string; dataDir: string; logger: Logger }): Mailer {
  if (opts.smtpUrl) {
    const transport = lazyTransport(opts.smtpUrl);
    return withQueue({
      async send(message) {
        await (await transport.get()).sendMail({ from: opts.from, ...message });
        opts.logger.info({ subject: message.subject }, 'mail sent over SMTP');
      },
      close: () => transport.close(),
    }, opts.logger, opts.dataDir);
  }

  const outbox = path.join(opts.dataDir, 'outbox');
  if (opts.outboxOnly) {
    opts.logger.warn(
      { outbox },
      'mail is written to this machine\'s outbox although the database is shared (MAIL_OUTBOX=on): mail written by processes on other machines is in their outbox. Set SMTP_URL to send it',
    );
  }
  const transport = lazyTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  let sequence = 0;
  return withQueue({
    async send(message) {
      const info = await (await transport.get()).sendMail({ from: opts.from, ...message });
      await mkdir(outbox, { recursive: true });
      sequence += 1;
      const name = `${Date.now()}-${String(sequence).padStart(6, '0')}-${randomUUID()}.eml`;
      const tmp = path.join(outbox, `.${name}.tmp`);
      await writeFile(tmp, info.message as Buffer, { mode: 0o600 });
      await rename(tmp, path.join(outbox, name));
      opts.logger.info({ subject: message.subject, file: name }, 'mail written to the outbox');
    },
    close: () => transport.close(),
  }, opts.logger, opts.dataDir);
}
