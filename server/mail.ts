import { randomUUID } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import nodemailer from 'nodemailer';
import type { Logger } from 'pino';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
  close(): void;
}

/**
 * Sends mail over SMTP when `SMTP_URL` is set. Otherwise every message is written as an
 * `.eml` file under `$DATA_DIR/outbox/`, named so that a directory listing is in send order;
 * each file appears whole (written aside, then renamed), so a reader never sees half a message.
 */
export function createMailer(opts: { smtpUrl: string | undefined; from: string; dataDir: string; logger: Logger }): Mailer {
  if (opts.smtpUrl) {
    const transport = nodemailer.createTransport(opts.smtpUrl);
    return {
      async send(message) {
        await transport.sendMail({ from: opts.from, ...message });
        opts.logger.info({ subject: message.subject }, 'mail sent over SMTP');
      },
      close: () => transport.close(),
    };
  }

  const outbox = path.join(opts.dataDir, 'outbox');
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  let sequence = 0;
  return {
    async send(message) {
      const info = await transport.sendMail({ from: opts.from, ...message });
      await mkdir(outbox, { recursive: true });
      sequence += 1;
      const name = `${Date.now()}-${String(sequence).padStart(6, '0')}-${randomUUID()}.eml`;
      const tmp = path.join(outbox, `.${name}.tmp`);
      await writeFile(tmp, info.message as Buffer, { mode: 0o600 });
      await rename(tmp, path.join(outbox, name));
      opts.logger.info({ subject: message.subject, file: name }, 'mail written to the outbox');
    },
    close: () => transport.close(),
  };
}
