/**
 * `npm run admin -- mail list|retry|purge`: the operator's view of the outbox (`mail/outbox.ts`).
 * Nothing here shows a mail's text: it holds links and codes meant for one person.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { AppError, parseOrThrow, queryInt } from '../../shared/index.ts';
import type { OutboxRow, OutboxState } from '../mail/outbox-repository.ts';
import type { Services } from '../services.ts';

export const MAIL_USAGE = `  mail list [--state waiting|failed|sent|all] [--limit N]
      The newest mails of the outbox (waiting ones by default): id, state, kind, address,
      attempts, when written, when next tried (or sent), and the last error. Never their text.
  mail retry ID… | mail retry --all
      Tries failed mails (and waiting ones) again now, for another day.
  mail purge --sent|--failed|--waiting … [--older-than DAYS]
      Deletes the mails in those states (written more than DAYS ago, 0 by default). Sent mails
      are forgotten after a week and failed ones after a month anyway.
`;

const STATES: Record<string, OutboxState[]> = {
  waiting: ['compose', 'pending'],
  failed: ['failed'],
  sent: ['sent'],
  all: ['compose', 'pending', 'failed', 'sent'],
};

const ListArgs = z.strictObject({
  state: z.enum(['waiting', 'failed', 'sent', 'all']).default('waiting'),
  limit: queryInt(1, 10_000).default(100),
});
const RetryArgs = z.union([z.strictObject({ all: z.literal(true), ids: z.array(z.never()).length(0) }), z.strictObject({ ids: z.array(queryInt(1, Number.MAX_SAFE_INTEGER)).min(1) })]);
const PurgeArgs = z
  .strictObject({
    sent: z.boolean().optional(),
    failed: z.boolean().optional(),
    waiting: z.boolean().optional(),
    // Decimal digits (an empty `--older-than=` is no 0, which would purge whatever the age).
    olderThan: z.string().regex(/^\d{1,6}(\.\d{1,6})?$/, 'must be a number of days in decimal digits').transform(Number).default(0),
  })
  .refine((a) => a.sent || a.failed || a.waiting, 'say which mails: --sent, --failed or --waiting');

const DAY_MS = 24 * 60 * 60 * 1000;

/** One line of `mail list`, tab-separated. */
function line(row: OutboxRow): string {
  const iso = (ms: number | null) => (ms === null ? '-' : new Date(ms).toISOString());
  const state = row.state === 'compose' ? 'waiting' : row.state === 'pending' ? 'waiting' : row.state;
  const when = row.state === 'sent' ? `sent ${iso(row.sentAt)}` : row.state === 'failed' ? 'given up' : `next ${iso(row.nextAttemptAt)}`;
  return [row.id, state, row.kind, row.to ?? '(not yet composed)', `${row.attempts} attempt${row.attempts === 1 ? '' : 's'}`, iso(row.createdAt), when, row.lastError ?? ''].join('\t');
}

export const mailCommands: Record<string, (services: Services, args: string[]) => Promise<void>> = {
  async 'mail list'(services, args) {
    const { values } = parseArgs({ args, options: { state: { type: 'string' }, limit: { type: 'string' } }, strict: true });
    const input = parseOrThrow(ListArgs, values);
    const rows = await services.mailer.list(STATES[input.state] ?? [], input.limit);
    for (const row of rows) console.log(line(row));
    const backlog = await services.mailer.backlog();
    console.error(`${backlog.pending} waiting (the oldest for ${backlog.oldestPendingSeconds} s), ${backlog.failed} failed`);
  },

  async 'mail retry'(services, args) {
    const { values, positionals } = parseArgs({ args, options: { all: { type: 'boolean' } }, allowPositionals: true, strict: true });
    const input = parseOrThrow(RetryArgs, { ...(values.all ? { all: true } : {}), ids: positionals });
    const count = await services.mailer.retry('all' in input ? 'all' : input.ids);
    if (count === 0) throw new AppError('NotFoundError', 'No failed or waiting mail was found to retry');
    console.log(`${count} mail${count === 1 ? '' : 's'} to be tried again now`);
  },

  async 'mail purge'(services, args) {
    const { values } = parseArgs({ args, options: { sent: { type: 'boolean' }, failed: { type: 'boolean' }, waiting: { type: 'boolean' }, 'older-than': { type: 'string' } }, strict: true });
    const input = parseOrThrow(PurgeArgs, { sent: values.sent, failed: values.failed, waiting: values.waiting, olderThan: values['older-than'] });
    const states = [...(input.sent ? STATES.sent ?? [] : []), ...(input.failed ? STATES.failed ?? [] : []), ...(input.waiting ? STATES.waiting ?? [] : [])];
    const count = await services.mailer.purge(states, input.olderThan * DAY_MS);
    console.log(`${count} mail${count === 1 ? '' : 's'} deleted`);
  },
};
