import type { Knex } from 'knex';

/** Where a row of the outbox is in its life (the migration `create_mail_outbox` says each). */
export type OutboxState = 'compose' | 'pending' | 'sent' | 'failed';

/** A row of `mail_outbox`. `body` is sealed (`SecretBox`, bound to the Message-ID). */
export interface OutboxRow {
  id: number;
  messageId: string;
  kind: string;
  state: OutboxState;
  to: string | null;
  subject: string | null;
  body: string | null;
  params: Record<string, unknown> | null;
  attempts: number;
  createdAt: number;
  nextAttemptAt: number;
  giveUpAt: number;
  sentAt: number | null;
  lastError: string | null;
}

interface DbRow {
  id: number;
  message_id: string;
  kind: string;
  state: OutboxState;
  recipient: string | null;
  subject: string | null;
  body: string | null;
  params: string | null;
  attempts: number | string;
  created_at: number | string;
  next_attempt_at: number | string;
  give_up_at: number | string;
  sent_at: number | string | null;
  last_error: string | null;
}

const toRow = (r: DbRow): OutboxRow => ({
  id: Number(r.id),
  messageId: r.message_id,
  kind: r.kind,
  state: r.state,
  to: r.recipient,
  subject: r.subject,
  body: r.body,
  params: r.params === null ? null : (JSON.parse(r.params) as Record<string, unknown>),
  attempts: Number(r.attempts),
  createdAt: Number(r.created_at),
  nextAttemptAt: Number(r.next_attempt_at),
  giveUpAt: Number(r.give_up_at),
  sentAt: r.sent_at === null ? null : Number(r.sent_at),
  lastError: r.last_error,
});

/** Mail that waits: to be composed, or to be sent (again). */
const WAITING: OutboxState[] = ['compose', 'pending'];

/** The what-is-waiting numbers `/health`, the metrics and `admin mail list` show. */
export interface MailBacklog {
  /** Mails not yet sent, whether due or waiting for a retry. */
  pending: number;
  /** Mails given up on (a permanent refusal, or a day of temporary ones), until purged. */
  failed: number;
  /** How long the oldest unsent mail has waited, in seconds; 0 when none waits. */
  oldestPendingSeconds: number;
}

/** The outbox's SQL, on the database or on the transaction of what a mail announces. */
export class OutboxRepository {
  readonly #db: Knex;

  constructor(db: Knex) {
    this.#db = db;
  }

  /** The database or transaction this repository writes on. */
  get knex(): Knex {
    return this.#db;
  }

  async insert(row: { messageId: string; kind: string; state: 'compose' | 'pending'; to?: string; subject?: string; body?: string; params?: Record<string, unknown>; now: number; giveUpAt: number }): Promise<void> {
    await this.#db('mail_outbox').insert({
      message_id: row.messageId,
      kind: row.kind,
      state: row.state,
      recipient: row.to ?? null,
      subject: row.subject ?? null,
      body: row.body ?? null,
      params: row.params === undefined ? null : JSON.stringify(row.params),
      attempts: 0,
      created_at: row.now,
      next_attempt_at: row.now,
      give_up_at: row.giveUpAt,
    });
  }

  async find(id: number): Promise<OutboxRow | null> {
    const row = (await this.#db('mail_outbox').where({ id }).first()) as DbRow | undefined;
    return row ? toRow(row) : null;
  }

  /** The oldest waiting mails that are due, in the order they were written. */
  async due(now: number, limit: number): Promise<OutboxRow[]> {
    const rows = (await this.#db('mail_outbox').whereIn('state', WAITING).where('next_attempt_at', '<=', now).orderBy('id').limit(limit)) as DbRow[];
    return rows.map(toRow);
  }

  /** When the next waiting mail is due; null when none waits. */
  async nextDue(): Promise<number | null> {
    const row = (await this.#db('mail_outbox').whereIn('state', WAITING).min({ at: 'next_attempt_at' }).first()) as { at: number | string | null } | undefined;
    return row?.at == null ? null : Number(row.at);
  }

  /**
   * Counts an attempt before it is made, and when the next one is due if this one fails: a
   * process that dies while sending leaves a row that is tried again then, never one tried in a
   * loop. Conditional on the row being as read, so of two workers (a lease that ran out) one wins.
   */
  async claim(row: OutboxRow, nextAttemptAt: number): Promise<boolean> {
    const changed = await this.#db('mail_outbox')
      .where({ id: row.id, state: row.state, attempts: row.attempts })
      // No error while an attempt is under way: what `retry` tells an attempt under way by.
      .update({ attempts: row.attempts + 1, next_attempt_at: nextAttemptAt, last_error: null });
    return changed === 1;
  }

  /** A composed mail: its address, subject and sealed text; it is then sent as any other. */
  async composed(id: number, mail: { to: string; subject: string; body: string }): Promise<void> {
    await this.#db('mail_outbox').where({ id, state: 'compose' }).update({ state: 'pending', recipient: mail.to, subject: mail.subject, body: mail.body, params: null });
  }

  /** Sent: the text (links, codes) is no longer kept. */
  async sent(id: number, now: number): Promise<void> {
    await this.#db('mail_outbox').where({ id }).update({ state: 'sent', sent_at: now, body: null, params: null, last_error: null });
  }

  async failed(id: number, error: string): Promise<void> {
    await this.#db('mail_outbox').where({ id }).update({ state: 'failed', last_error: error });
  }

  /** A failed attempt: tried again at `nextAttemptAt`. */
  async deferred(id: number, error: string, nextAttemptAt: number): Promise<void> {
    await this.#db('mail_outbox').where({ id }).update({ last_error: error, next_attempt_at: nextAttemptAt });
  }

  async remove(id: number): Promise<void> {
    await this.#db('mail_outbox').where({ id }).delete();
  }

  /** Every due waiting mail waits until `until` (the mail server is not answering). */
  async deferAllDue(now: number, until: number): Promise<void> {
    await this.#db('mail_outbox').whereIn('state', WAITING).where('next_attempt_at', '<=', now).update({ next_attempt_at: until });
  }

  /** Every waiting mail is due now (the mail server answers again, or an operator asked). */
  async dueNow(now: number): Promise<number> {
    return this.#db('mail_outbox').whereIn('state', WAITING).where('next_attempt_at', '>', now).update({ next_attempt_at: now });
  }

  /**
   * Failed and waiting mails (the `ids` given, or all) are tried again now, for another day:
   * those that hold their text, and those not composed yet, which hold what composes it (a
   * reset's or an activation's, whose link starts its life when it is sent). A mail whose
   * attempt is under way (claimed, its attempt's time not over, no error yet: `claim`) is left to
   * it: made due again, another process could send it alongside.
   */
  async retry(ids: number[] | 'all', now: number, giveUpAt: number): Promise<number> {
    const query = this.#db('mail_outbox')
      .whereIn('state', ['failed', ...WAITING])
      .where((has) => has.whereNotNull('body').orWhereNotNull('params'))
      .where((free) => free.where('state', 'failed').orWhere('attempts', 0).orWhereNotNull('last_error').orWhere('next_attempt_at', '<=', now));
    if (ids !== 'all') query.whereIn('id', ids);
    return query.update({ state: this.#db.raw("case when body is null then 'compose' else 'pending' end"), attempts: 0, next_attempt_at: now, give_up_at: giveUpAt, last_error: null });
  }

  /** Deletes mails in `states` written before `before`. */
  async purge(states: OutboxState[], before: number): Promise<number> {
    return this.#db('mail_outbox').whereIn('state', states).where('created_at', '<', before).delete();
  }

  /** The newest mails first, without their text. */
  async list(states: OutboxState[], limit: number): Promise<OutboxRow[]> {
    const rows = (await this.#db('mail_outbox').whereIn('state', states).orderBy('id', 'desc').limit(limit)) as DbRow[];
    return rows.map((row) => toRow({ ...row, body: null, params: null }));
  }

  async backlog(now: number): Promise<MailBacklog> {
    const rows = (await this.#db('mail_outbox')
      .whereIn('state', [...WAITING, 'failed'])
      .groupBy('state')
      .select('state')
      .count({ n: '*' })
      .min({ oldest: 'created_at' })) as Array<{ state: OutboxState; n: number | string; oldest: number | string | null }>;
    let pending = 0;
    let failed = 0;
    let oldest: number | null = null;
    for (const row of rows) {
      if (row.state === 'failed') {
        failed += Number(row.n);
        continue;
      }
      pending += Number(row.n);
      if (row.oldest !== null) oldest = Math.min(oldest ?? Infinity, Number(row.oldest));
    }
    return { pending, failed, oldestPendingSeconds: oldest === null ? 0 : Math.max(0, Math.floor((now - oldest) / 1000)) };
  }
}
