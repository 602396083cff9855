/**
 * The failure: behind a load balancer (how an install of several processes is reached), every
 * request came from the balancer's address, so the limits per client address (password tries,
 * sign-ups, reset mails) were shared by every person at once: thirty reset requests anywhere
 * locked everyone out of resets for an hour. Now `TRUST_PROXY` names the proxies whose
 * `X-Forwarded-For` is believed; unset, the header is ignored, so a client cannot pick its own
 * address to escape a limit.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RATE_LIMITS } from '../../server/rate-limits.ts';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A reset request as sent by the balancer on behalf of `client`. */
function resetFrom(client: string, n: number) {
  return new Client(server!.url).post('/resettable', { id: `nobody${n}@example.org`, token: 'dev-ok' }, { 'x-forwarded-for': client });
}

const LIMIT = RATE_LIMITS.resetAddress.points;

describe('rate limits per client address behind a load balancer', () => {
  it('with TRUST_PROXY naming the balancer, count each client as the balancer names it', async () => {
    server = await startServer({ TRUST_PROXY: 'loopback' });
    for (let n = 0; n < LIMIT; n += 1) expect((await resetFrom('203.0.113.5', n)).status).toBe(200);
    expect((await resetFrom('203.0.113.5', LIMIT)).status).toBe(429);
    expect((await resetFrom('203.0.113.6', LIMIT + 1)).status).toBe(200);
  });

  it('without TRUST_PROXY, ignore X-Forwarded-For: a client cannot name itself anew to escape a limit', async () => {
    server = await startServer();
    for (let n = 0; n < LIMIT; n += 1) expect((await resetFrom(`198.51.100.${n}`, n)).status).toBe(200);
    expect((await resetFrom('198.51.100.200', LIMIT)).status).toBe(429);
  });

  it('refuses a TRUST_PROXY that is neither a number of hops nor a list of addresses', async () => {
    await expect(startServer({ TRUST_PROXY: 'every proxy; really' })).rejects.toThrow(/TRUST_PROXY/);
  });
});
