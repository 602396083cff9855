/**
 * A mail server for tests of installs that send mail over SMTP (several machines cannot share
 * an outbox folder): it takes every message on 127.0.0.1 and keeps it, parsed.
 */
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { waitUntil } from './wait.ts';

export interface CaughtMail {
  to: string;
  subject: string;
  text: string;
  /** The Message-ID header, angle brackets included. */
  messageId: string;
}

export interface CatcherOptions {
  /** Listen on this port (to start a mail server where a service already expects one); 0 by default. */
  port?: number;
  /** An SMTP reply code (4xx, 5xx) to refuse a recipient with, or null to take it. */
  refuse?: (to: string) => number | null;
  /** Holds each recipient's answer until the promise this gives settles (a slow mail server). */
  hold?: (to: string) => Promise<void>;
}

export interface MailCatcher {
  /** `SMTP_URL` for the service. */
  url: string;
  mails: CaughtMail[];
  /** The newest mail to `to`, waiting (a little) for one to arrive. */
  lastTo(to: string): Promise<CaughtMail>;
  close(): Promise<void>;
}

export async function startMailCatcher(options: CatcherOptions = {}): Promise<MailCatcher> {
  const mails: CaughtMail[] = [];
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onRcptTo(address, _session, done) {
      const to = address.address.toLowerCase();
      const answer = () => {
        const code = options.refuse?.(to) ?? null;
        if (code === null) return done();
        done(Object.assign(new Error(code >= 500 ? 'Mailbox unavailable' : 'Try again later'), { responseCode: code }));
      };
      if (options.hold) void options.hold(to).then(answer, answer);
      else answer();
    },
    onData(stream, session, done) {
      simpleParser(stream)
        .then((mail) => {
          for (const rcpt of session.envelope.rcptTo) {
            mails.push({ to: rcpt.address.toLowerCase(), subject: mail.subject ?? '', text: mail.text ?? '', messageId: mail.messageId ?? '' });
          }
          done();
        })
        .catch(done);
    },
  });
  await new Promise<void>((resolve, reject) => {
    smtp.server.once('error', reject);
    smtp.listen(options.port ?? 0, '127.0.0.1', resolve);
  });
  const { port } = smtp.server.address() as AddressInfo;
  const last = (to: string) => mails.filter((m) => m.to === to.toLowerCase()).at(-1);
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    async lastTo(to) {
      await waitUntil(() => last(to) !== undefined, `a mail to ${to} received`);
      // Found: waitUntil returned.
      return last(to)!;
    },
    close: () => new Promise<void>((resolve) => smtp.close(() => resolve())),
  };
}
