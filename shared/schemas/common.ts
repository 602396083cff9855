import { z } from 'zod';

/** Milliseconds since the epoch, as the spec bounds every timestamp: 0 to 9999999999999. */
export const Timestamp = z.int().min(0).max(9_999_999_999_999);

/** A year in a history, relation or expertise entry: 1900 to 2099, null, or the empty string. */
export const Year = z.union([z.int().min(1900).max(2099), z.null(), z.literal('')]);

export const NonEmptyString = z.string().min(1);

/** An identifier a person types (an email or a tilde id): 1 to 254 characters. */
export const AccountId = z.string().min(1).max(254);

export const StringList = z.array(NonEmptyString);

/**
 * Mail that waits in the outbox longer than it should (`server/mail/outbox.ts`): the oldest mail
 * not sent yet has waited more than five minutes. The service is still healthy, since it
 * answers, but the people told to check their mail wait. No counts: `/health` is public, and how
 * many mails wait would tell whether a reset was asked for an address with an account (the
 * counts are in the metrics, on their own listener).
 */
export const MailBacklogReport = z.strictObject({
  status: z.literal('delayed'),
  /** How long the oldest unsent mail has waited. */
  oldestPendingSeconds: z.int().min(0),
});

/** `GET /health`: the service and its database answer; `mail` only while mail waits too long. */
export const HealthResult = z.strictObject({ status: z.literal('ok'), database: z.literal('ok'), mail: MailBacklogReport.optional() });

/**
 * A boolean in a query string (`true`/`false`, as the platform's clients write them), or a real
 * boolean from a tRPC client.
 */
export const QueryBoolean = z.union([z.boolean(), z.enum(['true', 'false']).transform((value) => value === 'true')]);

/** A whole number in a query string (decimal digits only), or a number from a tRPC client. */
export function queryInt(min: number, max: number) {
  return z.union([z.int(), z.string().regex(/^\d{1,16}$/, { message: 'Must be a whole number' }).transform(Number)]).pipe(z.int().min(min).max(max));
}

/**
 * Ids in a query string, as the real platform's clients send them: the key repeated
 * (`ids=a&ids=b`, the web client) or one comma-joined value (`ids=a,b`, the Python client), or
 * both. The same id twice is one id; 1 to `max` ids in all, each checked by `item`.
 */
export function idList(item: z.ZodType<string, string>, max: number) {
  return z
    .union([z.string(), z.array(z.string())])
    .transform((given) => [...new Set((Array.isArray(given) ? given : [given]).flatMap((value) => value.split(',')).map((id) => id.trim()))])
    .pipe(z.array(item).min(1).max(max, { message: `At most ${max} ids` }));
}
