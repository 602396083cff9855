import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Delivery, SessionClient } from './logout-repository.ts';
import { signJwt } from '../jwt.ts';
import { subjectOf, type Provider } from './provider.ts';
import type { ClientRecord } from './repository.ts';

/** How often each process looks for ended sessions and due deliveries. */
const TICK_MS = 1000;
/** How long one POST to a client may take before it counts as failed. */
const DELIVERY_TIMEOUT_MS = 5000;
/** How long a process holds a delivery it is sending: past it, another process may try. */
const LEASE_MS = 30_000;
/** Attempts before a delivery is given up: with the backoff below (about 68 minutes for the first 12, then hourly), about a day of trying. */
const MAX_ATTEMPTS = 34;
/** At most this many deliveries are POSTed at once by a process: a mass sign-out, or receivers that hang, open no more sockets than this. */
const MAX_SENDING = 50;
/** The wait before the next attempt: 2, 4, 8 … seconds, at most an hour. */
const backoffMs = (attempts: number) => Math.min(3600, 2 ** attempts) * 1000;
const EVENT = 'http://schemas.openid.net/event/backchannel-logout';
/**
 * How long a logout token lives (`exp`): longer than its retries (about a day), since it is signed
 * once, when queued, and every attempt sends the same token; a client checks `iat` and `jti`, not
 * a short `exp`. The key that signed it stays published for as long (`keys.ts`).
 */
export const LOGOUT_TOKEN_SECONDS = 2 * 24 * 3600;

/**
 * Back-channel logout (OpenID Connect Back-Channel Logout 1.0). When a browser session ends by a
 * person's or an operator's act (signing out here or from an application, logging out
 * everywhere, a password reset, a block, a merge), or a person revokes an application (its
 * consent is gone), each
 * client that signed them in through that session and registered a `backchannel_logout_uri` is
 * sent a logout token: an RS256 JWT (`typ: logout+jwt`) with `iss`, `aud`, `iat`, `exp`, `jti`,
 * `events`, `sub` (as that client knows the person) and `sid` (as in its ID tokens).
 *
 * Nothing waits for it: the end of a session is found in the database (`endedSessionClients`),
 * whichever process or command ended it, by every process once a second; the token goes into a
 * durable queue in the same transaction that forgets the session's client; and the queue is
 * delivered after the answer, each delivery leased by one process, POSTed to exactly the
 * registered URI without following redirects, with a timeout, and retried with backoff.
 */
export class LogoutNotifier {
  readonly #provider: Provider;
  readonly #log: Logger;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | null = null;
  #again = false;
  #stopped = false;
  /** Deliveries being POSTed, each under its lease: a round starts them and does not wait (a client that hangs holds up no other). */
  readonly #sending = new Set<Promise<void>>();

  constructor(provider: Provider, log: Logger) {
    this.#provider = provider;
    this.#log = log;
  }

  start(): void {
    this.#timer ??= setInterval(() => this.kick(), TICK_MS);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running;
    await Promise.all(this.#sending);
  }

  /** Looks now (after a sign-out here), without waiting for the next tick; never throws. */
  kick(): void {
    // A revocation answered while the server shuts down is found by the next process to look.
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.tick()
      .catch((error: unknown) => this.#log.warn({ err: error }, 'back-channel logout: a round failed'))
      .finally(() => {
        this.#running = null;
        if (this.#again) {
          this.#again = false;
          this.kick();
        }
      });
  }

  /**
   * One round: queue the logout tokens of sessions that ended, then start delivering what is
   * due. Deliveries run on after the round (each leased, so the next round skips it): a client
   * that takes its whole timeout to answer delays neither the next round nor other clients.
   */
  async tick(): Promise<void> {
    for (const ended of await this.#provider.logouts.endedSessionClients(100)) await this.#end(ended);
    await this.#deliverDue();
  }

  async #end(entry: SessionClient): Promise<void> {
    const client = await this.#provider.clients.find(entry.clientId);
    const uri = client?.backchannelLogoutUri ?? null;
    const delivery = client && uri ? { uri, logoutToken: await this.#logoutToken(entry.profileId, entry.sid, client) } : null;
    // A new sign-in of the same session to the same client comes after a consent given again,
    // under a key of its own (`sessionClientKey`), and is recorded again by any process.
    await this.#provider.logouts.endSessionClient(entry, delivery, this.#provider.now());
  }

  /**
   * The logout token for an application revoked while it signed the person in through no
   * browser session we still know of (they expired and were swept) but could act offline: `sub`
   * alone, no `sid`. Null when it registered no `backchannel_logout_uri`, or asked for `sid` in
   * every logout token (`backchannel_logout_session_required`), which it cannot have here.
   * Queued by `withdrawConsent` in its transaction, when no session of it is left to tell.
   */
  async offlineNotice(profileId: string, client: ClientRecord): Promise<{ uri: string; logoutToken: string } | null> {
    if (!client.backchannelLogoutUri || client.backchannelLogoutSessionRequired) return null;
    return { uri: client.backchannelLogoutUri, logoutToken: await this.#logoutToken(profileId, null, client) };
  }

  async #logoutToken(profileId: string, sid: string | null, client: ClientRecord): Promise<string> {
    const { kid, key } = await this.#provider.keys.signer();
    const now = Math.floor(this.#provider.now() / 1000);
    return signJwt(
      {
        events: { [EVENT]: {} },
        ...(sid === null ? {} : { sid }),
        iss: this.#provider.issuer,
        aud: client.id,
        sub: subjectOf(this.#provider, client, profileId),
        iat: now,
        exp: now + LOGOUT_TOKEN_SECONDS,
        jti: randomUUID(),
      },
      { alg: 'RS256', kid, typ: 'logout+jwt' },
      key,
    );
  }

  async #deliverDue(): Promise<void> {
    const now = this.#provider.now();
    const room = Math.min(20, MAX_SENDING - this.#sending.size);
    if (room <= 0) return;
    const due = await this.#provider.logouts.leaseDue(now, now + LEASE_MS, room);
    for (const delivery of due) {
      const sending: Promise<void> = this.#deliver(delivery)
        .catch((error: unknown) => this.#log.warn({ err: error, client: delivery.clientId }, 'back-channel logout: a delivery could not be recorded'))
        .finally(() => this.#sending.delete(sending));
      this.#sending.add(sending);
    }
  }

  async #deliver(delivery: Delivery): Promise<void> {
    const problem = await post(delivery.uri, delivery.logoutToken);
    const at = this.#provider.now();
    if (problem === null) {
      await this.#provider.logouts.delivered(delivery.id, at);
      return;
    }
    const attempts = delivery.attempts + 1;
    this.#log.info({ client: delivery.clientId, attempts, problem }, 'back-channel logout: not delivered yet');
    await this.#provider.logouts.failed(delivery.id, problem, attempts >= MAX_ATTEMPTS ? null : at + backoffMs(attempts), at);
  }
}

/** POSTs a logout token (a form, as §2.5 asks); null when the client answered 200 or 204, else why not. */
async function post(uri: string, logoutToken: string): Promise<string | null> {
  try {
    const res = await fetch(uri, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'cache-control': 'no-cache' },
      body: new URLSearchParams({ logout_token: logoutToken }),
      // Exactly the registered URI: a redirect is a failure, never followed.
      redirect: 'manual',
      signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
    });
    await res.body?.cancel();
    return res.status === 200 || res.status === 204 ? null : `answered ${res.status}`;
  } catch (error) {
    return error instanceof Error ? error.name : 'failed';
  }
}
