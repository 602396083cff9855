import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import { mailSettled } from '../../server/mail/mailer.ts';

export interface Mail {
  to: string;
  subject: string;
  text: string;
  file: string;
}

/** The messages in `$DATA_DIR/outbox`, oldest first, parsed as a mail client would. */
export async function readOutbox(dataDir: string): Promise<Mail[]> {
  // Mail goes out after the answer: wait for what this process's service has queued.
  await mailSettled(dataDir);
  const dir = path.join(dataDir, 'outbox');
  let files: string[];
  try {
    files = (await readdir(dir)).filter((f) => f.endsWith('.eml')).sort();
  } catch {
    return [];
  }
  return Promise.all(
    files.map(async (file) => {
      const parsed = await simpleParser(await readFile(path.join(dir, file)));
      const to = Array.isArray(parsed.to) ? parsed.to[0] : parsed.to;
      return { to: to?.value[0]?.address ?? '', subject: parsed.subject ?? '', text: parsed.text ?? '', file };
    }),
  );
}

/** The newest mail to an address, or a failed assertion naming what the outbox holds. */
export async function lastMailTo(dataDir: string, to: string): Promise<Mail> {
  const mails = (await readOutbox(dataDir)).filter((m) => m.to.toLowerCase() === to.toLowerCase());
  const mail = mails.at(-1);
  if (!mail) throw new Error(`No mail to ${to} in the outbox`);
  return mail;
}
