/**
 * An SMTP attempt has a deadline of its own (`SMTP_ATTEMPT_MS`, `server/mail/transport.ts`): a
 * mail server that answers slowly enough to keep the socket's idle timeout from firing still
 * cannot hold an attempt past it, so the outbox's budget for an attempt holds, after which the
 * mail may be tried again (no second send while the first may still be running).
 */
import { afterEach, expect, it } from 'vitest';
import { DeliveryError, SMTP_ATTEMPT_MS, smtpTransport } from '../../server/mail/transport.ts';
import { startMailCatcher, type MailCatcher } from '../helpers/smtp.ts';

let smtp: MailCatcher | undefined;
afterEach(async () => {
  await smtp?.close();
});

const envelope = { to: 'slow@example.org', subject: 'Held', text: 'held by a slow server', messageId: '<held@example.org>', id: 1, createdAt: 1 };

it('ends an attempt that a slow mail server holds past its deadline, as the server being unreachable', async () => {
  // A server that never answers the recipient: only the deadline ends the attempt.
  let asked = 0;
  smtp = await startMailCatcher({ hold: () => ((asked += 1), new Promise<void>(() => undefined)) });
  const transport = smtpTransport(smtp.url, 'service@example.org', 300);
  const started = Date.now();
  const failure = await transport.deliver(envelope).then(() => null, (error: unknown) => error);
  const took = Date.now() - started;
  transport.close();
  expect(asked).toBe(1);
  expect(failure).toBeInstanceOf(DeliveryError);
  expect((failure as DeliveryError).kind).toBe('unreachable');
  expect(took).toBeGreaterThanOrEqual(250);
  expect(smtp.mails).toEqual([]);
});

it('delivers within the deadline as before, and the deadline is within the outbox budget for an attempt', async () => {
  smtp = await startMailCatcher();
  const transport = smtpTransport(smtp.url, 'service@example.org', 5_000);
  await transport.deliver(envelope);
  transport.close();
  expect(smtp.mails.map((m) => m.messageId)).toEqual(['<held@example.org>']);
  expect(SMTP_ATTEMPT_MS).toBeLessThan(90_000);
});
