/**
 * The metrics of one app (`createApp`), in a prom-client `Registry` of its own: the test suite
 * runs many apps in one process, and prom-client's global registry would mix them. What each
 * metric counts, and its labels, is in `docs/metrics.md`; the services report through the small
 * calls of `Metrics` (`events.ts`) and never see prom-client.
 */
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Db } from '../../db/knex.ts';
import type { Route } from '../http/routes.ts';
import { watchPool } from './database.ts';
import { RATE_LIMITS } from '../rate-limits.ts';
import type { AssemblyOutcome, Lockout, MailDelivery, Metrics, MfaFactor, SignInMethod, UploadKind, UploadOutcome } from './events.ts';
import type { MailBacklog } from '../mail/outbox-repository.ts';
import { requestMetrics, type RequestLabels } from './http.ts';
import { MAX_CLIENT_LABELS, OTHER_CLIENT, PREFIX } from './names.ts';
import { processRegistry } from './process.ts';

/** An app's metrics: what the services count, the request middleware, and the scrape. */
export interface AppMetrics extends Metrics {
  /** The first step of every request (`http.ts`). */
  readonly requests: RequestHandler;
  /** Watches the database's connection pool (`database.ts`). */
  watchDatabase(db: Db): void;
  /** The text format of this app's metrics and the process's (`process.ts`), with its Content-Type. */
  scrape(): Promise<{ contentType: string; text: string }>;
}

/** Seconds, from a millisecond to a minute: most answers take a few milliseconds, uploads up to minutes. */
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60];
const SIGN_IN_METHODS: readonly SignInMethod[] = ['password', 'totp', 'email_code', 'recovery_code', 'passkey', 'oidc'];

/**
 * The text as the exposition format spells it: prom-client 15 writes a value that is not a
 * number as `Nan` (the event loop's mean and deviation before their first sample), the format's
 * is `NaN`, which strict parsers alone take.
 */
export function spelledAsTheFormat(text: string): string {
  return text.replace(/ Nan$/gm, ' NaN');
}

export function createMetrics(opts: { routes: readonly Route[]; logger: Logger }): AppMetrics {
  // The process's metrics from the start (the event-loop delay is sampled from then on).
  const shared = processRegistry();
  const registry = new Registry();
  const registers = [registry];
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) => new Counter<L>({ name: `${PREFIX}${name}`, help, labelNames, registers });

  const requests = new Histogram<RequestLabels>({
    name: `${PREFIX}http_request_duration_seconds`,
    help: 'Answered HTTP requests (its _count) and how long each took, by route template (the route table\'s path; "unmatched" for none), method and status.',
    labelNames: ['route', 'method', 'status'],
    buckets: REQUEST_BUCKETS,
    registers,
  });
  const signIns = counter('sign_ins_total', 'Sign-in attempts by method (password, totp, email_code, recovery_code, passkey, oidc) and outcome (success, failure, second_step_required).', ['method', 'outcome']);
  const lockouts = counter('lockouts_total', 'Locks begun: second_step (the person\'s second step, after too many wrong codes), second_step_browser (one remembered browser\'s own allowance).', ['lock']);
  const refusals = counter('rate_limit_refusals_total', 'Tries a rate limit said no to, by the limit\'s name.', ['limit']);
  const enrolments = counter('mfa_enrolments_total', 'Second factors turned on, by factor (totp, email_code, passkey).', ['factor']);
  const tokens = counter('oidc_tokens_issued_total', `Tokens issued at the provider's token endpoint, by grant type and client (its id; past ${MAX_CLIENT_LABELS} clients, "${OTHER_CLIENT}").`, ['grant_type', 'client']);
  const uploads = counter('upload_requests_total', 'Upload requests that reached the service with their file, by kind (whole, chunk, tus) and outcome (ok, refused, error).', ['kind', 'outcome']);
  const uploadBytes = counter('upload_received_bytes_total', 'Bytes of the files and chunks of those requests, by kind.', ['kind']);
  const chunks = counter('upload_chunks_stored_total', 'Chunks stored (a chunk sent again is not counted twice).', []);
  const assemblies = counter('upload_assemblies_total', 'Chunked uploads assembled into a file, by outcome (done, refused, error).', ['outcome']);
  const deliveries = counter('mail_deliveries_total', 'Delivery attempts of the mail outbox, by outcome (sent, retry, failed).', ['outcome']);
  // Every known series from 0, so a rate over them is right from the first scrape on.
  for (const method of SIGN_IN_METHODS) for (const outcome of ['success', 'failure'] as const) signIns.inc({ method, outcome }, 0);
  signIns.inc({ method: 'password', outcome: 'second_step_required' }, 0);
  for (const lock of ['second_step', 'second_step_browser'] satisfies Lockout[]) lockouts.inc({ lock }, 0);
  for (const limit of Object.keys(RATE_LIMITS)) refusals.inc({ limit }, 0);
  for (const factor of ['totp', 'email_code', 'passkey'] satisfies MfaFactor[]) enrolments.inc({ factor }, 0);
  for (const kind of ['whole', 'chunk', 'tus'] satisfies UploadKind[]) {
    uploadBytes.inc({ kind }, 0);
    for (const outcome of ['ok', 'refused', 'error'] satisfies UploadOutcome[]) uploads.inc({ kind, outcome }, 0);
  }
  for (const outcome of ['done', 'refused', 'error'] satisfies AssemblyOutcome[]) assemblies.inc({ outcome }, 0);
  for (const outcome of ['sent', 'retry', 'failed'] satisfies MailDelivery[]) deliveries.inc({ outcome }, 0);

  let pool: { refresh(): void } | null = null;
  let backlog: { read: () => Promise<MailBacklog>; registry: Registry; messages: Gauge<'status'>; oldest: Gauge; failures: Counter } | null = null;
  const clients = new Set<string>();

  /**
   * The mail backlog's gauges, read now, in the text format; none when it cannot be read (a
   * stale or made-up value would look like a real one): the failure is logged and counted.
   */
  const backlogText = async (): Promise<string> => {
    if (!backlog) return '';
    const { read, messages, oldest, failures } = backlog;
    try {
      const now = await read();
      messages.set({ status: 'pending' }, now.pending);
      messages.set({ status: 'failed' }, now.failed);
      oldest.set(now.oldestPendingSeconds);
      return await backlog.registry.metrics();
    } catch (error) {
      opts.logger.warn({ err: error }, 'metrics: the mail backlog could not be read');
      failures.inc();
      return '';
    }
  };

  return {
    requests: requestMetrics(requests, opts.routes),
    signIn: (method, outcome) => signIns.inc({ method, outcome }),
    lockout: (lock) => lockouts.inc({ lock }),
    rateLimited: (limit) => refusals.inc({ limit }),
    mfaEnrolled: (factor) => enrolments.inc({ factor }),
    oidcTokens(grantType, clientId) {
      if (!clients.has(clientId) && clients.size < MAX_CLIENT_LABELS) clients.add(clientId);
      tokens.inc({ grant_type: grantType, client: clients.has(clientId) ? clientId : OTHER_CLIENT });
    },
    upload(kind, bytes, outcome) {
      uploads.inc({ kind, outcome });
      uploadBytes.inc({ kind }, bytes);
    },
    chunkStored: () => chunks.inc(),
    assembly: (outcome) => assemblies.inc({ outcome }),
    mailDelivery: (outcome) => deliveries.inc({ outcome }),
    watchMailBacklog(read) {
      if (backlog) {
        backlog.read = read;
        return;
      }
      // Gauges of a registry of their own, shown only when the backlog was read (`backlogText`).
      const own = new Registry();
      backlog = {
        read,
        registry: own,
        messages: new Gauge({ name: `${PREFIX}mail_outbox_messages`, help: 'Mail in the outbox, by status (pending: to be sent or retried; failed: given up on). Absent when the outbox could not be read.', labelNames: ['status'], registers: [own] }),
        oldest: new Gauge({ name: `${PREFIX}mail_oldest_pending_seconds`, help: 'How long the oldest pending mail has waited (0: none waits). Absent when the outbox could not be read.', registers: [own] }),
        failures: counter('mail_backlog_read_failures_total', 'Scrapes at which the mail outbox could not be read (its gauges were then left out).', []),
      };
    },
    watchDatabase(db) {
      pool ??= watchPool(db, registry);
    },
    async scrape() {
      pool?.refresh();
      const mail = await backlogText();
      const own = await registry.metrics();
      return { contentType: registry.contentType, text: spelledAsTheFormat([await shared.metrics(), own, mail].filter(Boolean).join('\n')) };
    },
  };
}
