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
}

export interface MailCatcher {
  /** `SMTP_URL` for the service. */
  url: string;
  mails: CaughtMail[];
  /** The newest mail to `to`, waiting (a little) for one to arrive. */
  lastTo(to: string): Promise<CaughtMail>;
  close(): Promise<void>;
}

export async function startMailCatcher(): Promise<MailCatcher> {
  const mails: CaughtMail[] = [];
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, session, done) {
      simpleParser(stream)
        .then((mail) => {
          for (const rcpt of session.envelope.rcptTo) mails.push({ to: rcpt.address.toLowerCase(), subject: mail.subject ?? '', text: mail.text ?? '' });
          done();
        })
        .catch(done);
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
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
