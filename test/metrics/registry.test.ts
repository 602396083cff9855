/**
 * The rules of one app's metrics that need no server: the application label is bounded, the mail
 * backlog is read at each scrape and left out (and counted) when it cannot be read, and every
 * known series starts at 0.
 */
import { describe, expect, it } from 'vitest';
import { routes } from '../../server/http/routes.ts';
import { createLogger } from '../../server/logger.ts';
import { MAX_CLIENT_LABELS, OTHER_CLIENT } from '../../server/metrics/names.ts';
import { createMetrics } from '../../server/metrics/registry.ts';
import { parse } from './scrape.ts';

const fresh = () => createMetrics({ routes, logger: createLogger('silent') });
const read = async (metrics: ReturnType<typeof fresh>) => parse((await metrics.scrape()).text);

describe('an app’s metrics', () => {
  it('give the first applications a client label each, and count any later one as "other"', async () => {
    const metrics = fresh();
    for (let i = 0; i < MAX_CLIENT_LABELS + 5; i += 1) metrics.oidcTokens('authorization_code', `app-${i}`);
    metrics.oidcTokens('refresh_token', 'app-0');
    metrics.oidcTokens('refresh_token', `app-${MAX_CLIENT_LABELS + 1}`);
    const scraped = await read(metrics);
    const clients = new Set(scraped.series('peer_review_oidc_tokens_issued_total').map((s) => s.labels.client));
    expect(clients.size).toBe(MAX_CLIENT_LABELS + 1);
    expect(scraped.value('peer_review_oidc_tokens_issued_total', { client: OTHER_CLIENT, grant_type: 'authorization_code' })).toBe(5);
    expect(scraped.value('peer_review_oidc_tokens_issued_total', { client: OTHER_CLIENT, grant_type: 'refresh_token' })).toBe(1);
    expect(scraped.value('peer_review_oidc_tokens_issued_total', { client: 'app-0' })).toBe(2);
  });

  it('read the mail backlog at each scrape, and leave it out (counted) when it cannot be read', async () => {
    const metrics = fresh();
    expect((await read(metrics)).has('peer_review_mail_outbox_messages')).toBe(false);
    let backlog: { pending: number; failed: number; oldestPendingSeconds: number } | Error = { pending: 3, failed: 1, oldestPendingSeconds: 42 };
    metrics.watchMailBacklog(async () => {
      if (backlog instanceof Error) throw backlog;
      return backlog;
    });
    metrics.mailDelivery('sent');
    metrics.mailDelivery('retry');
    metrics.mailDelivery('sent');
    const first = await read(metrics);
    expect(first.value('peer_review_mail_outbox_messages', { status: 'pending' })).toBe(3);
    expect(first.value('peer_review_mail_outbox_messages', { status: 'failed' })).toBe(1);
    expect(first.value('peer_review_mail_oldest_pending_seconds')).toBe(42);
    expect(first.value('peer_review_mail_backlog_read_failures_total')).toBe(0);
    expect(Object.fromEntries(first.series('peer_review_mail_deliveries_total').map((s) => [s.labels.outcome, s.value]))).toEqual({ sent: 2, retry: 1, failed: 0 });
    backlog = new Error('the database is gone');
    const failed = await read(metrics);
    expect(failed.has('peer_review_mail_outbox_messages')).toBe(false);
    expect(failed.has('peer_review_mail_oldest_pending_seconds')).toBe(false);
    expect(failed.value('peer_review_mail_backlog_read_failures_total')).toBe(1);
    backlog = { pending: 0, failed: 1, oldestPendingSeconds: 0 };
    expect((await read(metrics)).value('peer_review_mail_outbox_messages', { status: 'pending' })).toBe(0);
  });

  it('start every known series at 0', async () => {
    const scraped = await read(fresh());
    expect(scraped.series('peer_review_sign_ins_total')).toHaveLength(6 * 2 + 1);
    expect(scraped.value('peer_review_sign_ins_total')).toBe(0);
    expect(scraped.series('peer_review_rate_limit_refusals_total').map((s) => s.labels.limit)).toContain('mfaAddress');
    expect(scraped.series('peer_review_upload_requests_total')).toHaveLength(9);
    expect(scraped.series('peer_review_lockouts_total')).toHaveLength(2);
  });
});
