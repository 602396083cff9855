import { mkdir, open, rename, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Transporter } from 'nodemailer';
import { syncFolder } from '../sync-folder.ts';
import type { MailMessage } from './mailer.ts';

/** A mail as the outbox hands it to a transport: the message, its Message-ID and its row. */
export interface Envelope extends MailMessage {
  /** The RFC 5322 Message-ID, angle brackets included: the same at every attempt. */
  messageId: string;
  /** The outbox row's id and when it was written: the outbox folder's file name. */
  id: number;
  createdAt: number;
}

/** Why a delivery failed, as the outbox acts on it. */
export class DeliveryError extends Error {
  /**
   * `permanent`: the mail server refused this mail for good (a 5xx reply other than 503), so
   * it is not tried again. `unreachable`: no mail server answered (a refused connection, a
   * timeout, DNS): every waiting mail waits, not only this one. Otherwise, a temporary refusal
   * of this mail (a 4xx reply).
   */
  readonly kind: 'permanent' | 'temporary' | 'unreachable';

  constructor(kind: DeliveryError['kind'], message: string) {
    super(message);
    this.name = 'DeliveryError';
    this.kind = kind;
  }
}

/** Sends one mail; throws a `DeliveryError` when it was not delivered. */
export interface Transport {
  readonly name: 'smtp' | 'outbox';
  deliver(mail: Envelope): Promise<void>;
  close(): void;
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
 * How long a mail server may take, far below nodemailer's defaults (two minutes to connect, ten
 * for a silent socket): the outbox sends one mail at a time, and a server that does not answer
 * must not hold every other mail (or the worker's lease) for minutes.
 */
const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 };

/**
 * How long one attempt may take in all. The socket's timeout restarts with every reply, so a
 * server answering each command just within it could hold an attempt for many minutes; at this
 * deadline the attempt is aborted and its connection closed, well within the outbox's budget for
 * an attempt (`ATTEMPT_BUDGET_MS`, 90 s), after which the mail may be tried again.
 */
export const SMTP_ATTEMPT_MS = 60_000;

/**
 * What a nodemailer error says about the delivery, in words an operator can act on: the error's
 * code, the SMTP command and reply code, and the enhanced status (`5.1.1`). Never the server's
 * reply text, which usually repeats the address.
 *
 * Only a refusal of this mail (a 5xx reply to its recipient or its text) gives it up; a 5xx to
 * anything else (the login, `MAIL FROM`, STARTTLS) is the server's set-up refusing every mail,
 * which an operator fixes: every mail then waits, as when no server answers.
 */
function classify(error: unknown): DeliveryError {
  const e = error as { code?: string; responseCode?: number; permanent?: boolean; response?: string; command?: string };
  const enhanced = /\b[245]\.\d{1,3}\.\d{1,3}\b/.exec(e.response ?? '')?.[0];
  const what = [e.code ?? 'Error', e.command, e.responseCode, enhanced].filter((part) => part !== undefined && part !== '').join(' ');
  const aboutThisMail = /^(RCPT|DATA)/i.test(e.command ?? '');
  if (e.permanent === true && aboutThisMail) return new DeliveryError('permanent', what);
  // A reply about this mail (4xx, 503) refuses it for now; anything else stops every mail.
  if (e.responseCode && aboutThisMail) return new DeliveryError('temporary', what);
  return new DeliveryError('unreachable', what);
}

/** Mail over SMTP (`SMTP_URL`): each attempt a connection of its own, ended at `attemptMs`. */
export function smtpTransport(url: string, from: string, attemptMs = SMTP_ATTEMPT_MS): Transport {
  const transport = lazyTransport({ url, ...SMTP_TIMEOUTS });
  return {
    name: 'smtp',
    async deliver(mail) {
      try {
        await (await transport.get()).sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text, messageId: mail.messageId, signal: AbortSignal.timeout(attemptMs) });
      } catch (error) {
        throw classify(error);
      }
    },
    close: () => transport.close(),
  };
}

/**
 * Mail as `.eml` files under `$DATA_DIR/outbox/` (no `SMTP_URL`): the embedded default's
 * transport. A file is named after its outbox row (when it was written, then its id), so a
 * listing is in the order the mails were written, and a mail tried again after a crash between
 * writing its file and marking its row finds its file there and is not written twice. Each file
 * appears whole (written aside, then renamed), so a reader never sees half a message, and is on
 * the disk, its bytes and its name flushed, before its row is marked sent: a power loss loses no
 * mail the outbox let go of.
 */
export function outboxFolderTransport(dataDir: string, from: string): Transport {
  const outbox = path.join(dataDir, 'outbox');
  const transport = lazyTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    name: 'outbox',
    async deliver(mail) {
      const name = `${mail.createdAt}-${String(mail.id).padStart(10, '0')}.eml`;
      const file = path.join(outbox, name);
      // Written before: kept. An empty file is what a power loss leaves of one written by a
      // version that did not flush its bytes before the rename: written again.
      if (((await stat(file).catch(() => null))?.size ?? 0) > 0) return;
      try {
        const info = await (await transport.get()).sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text, messageId: mail.messageId });
        if ((await mkdir(outbox, { recursive: true })) !== undefined) await syncFolder(dataDir);
        const aside = path.join(outbox, `.${name}.tmp`);
        // On the disk before the row is marked sent, as a mail server's spool is before it
        // answers: the bytes, then the name (a crash or a power loss leaves the whole file or none).
        const handle = await open(aside, 'w', 0o600);
        try {
          await handle.writeFile(info.message as Buffer);
          await handle.sync();
        } finally {
          await handle.close();
        }
        await rename(aside, file);
        await syncFolder(outbox);
      } catch (error) {
        // A full or read-only disk is the folder's outage: every mail waits for it.
        throw new DeliveryError('unreachable', (error as NodeJS.ErrnoException).code ?? (error as Error).name);
      }
    },
    close: () => transport.close(),
  };
}
