import type { Knex } from 'knex';

/**
 * Issue 28: every mail is a row, written in the transaction of what it announces, and sent by
 * one worker of the install at a time (`server/mail/outbox.ts`).
 *
 * - `state`: `compose` (a mail whose content a composer makes when it is sent: a reset link asked
 *   for an id that may have no account, so the request writes the same row whoever asked),
 *   `pending`, `sent`, `failed`.
 * - `message_id`: the RFC 5322 Message-ID, fixed when the row is written, so a mail sent again
 *   after a crash between sending and marking it sent is the same message to its reader's client.
 * - `body`: the text, sealed (AES-256-GCM, a key derived from the session secret) because it
 *   holds links and codes; emptied once sent. `params`: a composer's input (ids, never a secret).
 * - `give_up_at`: when a temporary failure becomes a permanent one (a day after it was written,
 *   or after `admin mail retry`).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('mail_outbox', (t) => {
    t.increments('id');
    t.text('message_id').notNullable().unique();
    t.text('kind').notNullable();
    t.text('state').notNullable();
    t.text('recipient').nullable();
    t.text('subject').nullable();
    t.text('body').nullable();
    t.text('params').nullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.bigInteger('created_at').notNullable();
    t.bigInteger('next_attempt_at').notNullable();
    t.bigInteger('give_up_at').notNullable();
    t.bigInteger('sent_at').nullable();
    t.text('last_error').nullable();
    t.index(['state', 'next_attempt_at']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('mail_outbox');
}
