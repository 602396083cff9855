/**
 * Rows 4 and 5: complete sign-ins through the OpenID Connect provider, against RS256 signatures
 * alone; logins, against scrypt alone. Each baseline runs in a process of its own, in turns with
 * the load on the service.
 */
import type autocannon from 'autocannon';
import { decodeProtectedHeader } from 'jose';
import { openDatabase } from '../../../db/knex.ts';
import { loadConfig } from '../../../server/config.ts';
import { ACCESS_TOKEN_COOKIE, REFRESH_TOKEN_COOKIE } from '../../../shared/index.ts';
import { cookieHeader, keepCookies } from '../../helpers/cookies.ts';
import { alternate, combine, expectOnly, load, type Load, type LoadOptions } from '../load.ts';
import { runJson } from '../processes.ts';
import type { Row } from '../report.ts';
import { CLIENT_ID, OFFLINE_CLIENT_ID, PASSWORD, pkcePair, REDIRECT_URI, benchDatabaseEnv } from '../setup.ts';
import { getJson, ms, p99, ratioRow, withBaseline, type BenchContext } from './common.ts';

/** The authorization request of the bench's client, with a PKCE challenge. */
function authorizePath(challenge: string): string {
  const query = new URLSearchParams({
    client_id: CLIENT_ID,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    scope: 'openid profile email',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 'bench-state',
    nonce: 'bench-nonce',
  });
  return `/oidc/authorize?${query.toString()}`;
}

function tokenForm(code: string, verifier: string): string {
  return new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: REDIRECT_URI, client_id: CLIENT_ID }).toString();
}

/**
 * A sign-in as autocannon's two requests on one connection: the authorization request with the
 * session cookie (consent given, so it answers a redirect with a code at once), then the token
 * request with that code and the PKCE verifier. Sign-ins are the token endpoint's 200s.
 */
function signInRequests(cookie: string, challenge: string, verifier: string): autocannon.Request[] {
  return [
    {
      method: 'GET',
      path: authorizePath(challenge),
      headers: { cookie },
      onResponse: (_status, _body, context, headers) => {
        const location = Object.entries(headers ?? {}).find(([name]) => name.toLowerCase() === 'location')?.[1];
        (context as { code?: string }).code = new URL(String(location ?? 'http://x')).searchParams.get('code') ?? 'missing';
      },
    },
    {
      method: 'POST',
      path: '/oidc/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      setupRequest: (request, context) => ({ ...request, body: tokenForm((context as { code?: string }).code ?? 'missing', verifier) }),
    },
  ];
}

/** A code exchanged at `base`'s token endpoint, the answer checked (an RS256 ID token); its access token. */
async function exchangeCode(base: string, code: string, verifier: string): Promise<string> {
  const res = await fetch(`${base}/oidc/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: tokenForm(code, verifier),
  });
  const answer = (await res.json()) as { access_token?: string; id_token?: string };
  if (!answer.access_token || !answer.id_token || decodeProtectedHeader(answer.id_token).alg !== 'RS256') {
    throw new Error(`token at ${base}: ${res.status} ${JSON.stringify(answer)}`);
  }
  return answer.access_token;
}

/**
 * The scripted login and consent at the node-oidc-provider peer (`baselines/oidc-provider.ts`),
 * walked once as a browser would: authorize, the login interaction, back to authorize, the
 * consent interaction, back again, a code, the token (checked). Answers the session cookie it
 * left: what the timed authorization requests send, as ours send our session's.
 */
async function peerSignIn(base: string): Promise<string> {
  const { verifier, challenge } = pkcePair();
  const jar = new Map<string, string>();
  const code = await walkToCode(`${base}${authorizePath(challenge)}`, jar);
  const session = [...jar].filter(([name]) => name.startsWith('_session'));
  if (session.length === 0) throw new Error('peer sign-in: no session cookie');
  await exchangeCode(base, code, verifier);
  return cookieHeader(session);
}

/** Follows the peer's redirects (its scripted login and consent) from `url` to the client's redirect URI; the code. */
async function walkToCode(url: string, jar: Map<string, string>): Promise<string> {
  let at = url;
  for (let hop = 0; hop < 10; hop += 1) {
    const res = await fetch(at, { headers: { cookie: cookieHeader(jar) }, redirect: 'manual' });
    keepCookies(jar, res);
    const location = res.headers.get('location');
    if (res.status < 300 || res.status >= 400 || !location) throw new Error(`peer sign-in at ${at}: ${res.status} ${await res.text()}`);
    const next = new URL(location, at);
    if (next.href.startsWith(REDIRECT_URI)) {
      const code = next.searchParams.get('code');
      if (!code) throw new Error(`peer sign-in: ${next.href}`);
      return code;
    }
    at = next.href;
  }
  throw new Error('peer sign-in: too many redirects');
}

/**
 * A refresh token at the peer: a sign-in of the offline client asking `offline_access` with
 * `prompt=consent` (the peer's scripted consent grants it), its code exchanged.
 */
async function peerRefreshToken(base: string): Promise<string> {
  const { verifier, challenge } = pkcePair();
  const query = new URLSearchParams({ client_id: OFFLINE_CLIENT_ID, redirect_uri: REDIRECT_URI, response_type: 'code', scope: 'openid offline_access', prompt: 'consent', code_challenge: challenge, code_challenge_method: 'S256' });
  const code = await walkToCode(`${base}/oidc/authorize?${query.toString()}`, new Map());
  const res = await fetch(`${base}/oidc/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: REDIRECT_URI, client_id: OFFLINE_CLIENT_ID }),
  });
  const answer = (await res.json()) as { refresh_token?: string };
  if (!answer.refresh_token) throw new Error(`peer refresh token: ${res.status} ${JSON.stringify(answer)}`);
  return answer.refresh_token;
}

/**
 * Refresh-token rotations one after the other at `base` for `seconds`: each answer's refresh
 * token is the next request's (each answer checked: a new access token and refresh token).
 */
async function rotations(base: string, first: string, seconds: number): Promise<{ perSecond: number; last: string }> {
  let token = first;
  let count = 0;
  const start = performance.now();
  while (performance.now() - start < seconds * 1000) {
    const res = await fetch(`${base}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token, client_id: OFFLINE_CLIENT_ID }).toString(),
    });
    const answer = (await res.json()) as { access_token?: string; refresh_token?: string };
    if (res.status !== 200 || !answer.access_token || !answer.refresh_token || answer.refresh_token === token) {
      throw new Error(`refresh at ${base}: ${res.status} ${JSON.stringify(answer)}`);
    }
    token = answer.refresh_token;
    count += 1;
  }
  return { perSecond: count / ((performance.now() - start) / 1000), last: token };
}

const tokens = new WeakMap<BenchContext, Promise<string>>();

/** The `Cookie` header of the seeded signer's browser session (both its cookies: the provider takes no less). */
function seededSession(ctx: BenchContext): string {
  return cookieHeader([
    [ACCESS_TOKEN_COOKIE, ctx.seeded.signer.accessToken],
    [REFRESH_TOKEN_COOKIE, ctx.seeded.signer.refreshToken],
  ]);
}

/** One sign-in with a session whose consent was given: a code at once, then the token; its access token. */
async function signInWith(base: string, cookie: string): Promise<string> {
  const { verifier, challenge } = pkcePair();
  const authorize = await fetch(`${base}${authorizePath(challenge)}`, { headers: { cookie }, redirect: 'manual' });
  const code = new URL(authorize.headers.get('location') ?? 'http://x').searchParams.get('code');
  if (authorize.status < 300 || authorize.status >= 400 || !code) throw new Error(`authorize at ${base}: ${authorize.status} ${authorize.headers.get('location')}`);
  return exchangeCode(base, code, verifier);
}

/** One sign-in by hand, checked end to end (a code at once, an RS256 ID token); its access token. */
export function oidcAccessToken(ctx: BenchContext): Promise<string> {
  let token = tokens.get(ctx);
  if (!token) {
    token = signInWith(ctx.server.url, seededSession(ctx));
    tokens.set(ctx, token);
  }
  return token;
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

export class SignInRows {
  readonly #ctx: BenchContext;

  constructor(ctx: BenchContext) {
    this.#ctx = ctx;
  }

  /**
   * Row 4. A sign-in is two requests on one connection: the authorization request with the
   * session cookie (consent was given, so it answers 303 with a code at once), then the token
   * request with that code and the PKCE verifier, answered with the RS256 ID token. Sign-ins are
   * the token endpoint's 200s.
   */
  async row4(): Promise<Row[]> {
    await oidcAccessToken(this.#ctx);
    const { verifier, challenge } = pkcePair();
    const requests = signInRequests(seededSession(this.#ctx), challenge, verifier);
    const options: LoadOptions = { url: this.#ctx.server.url, connections: 16, requests, seconds: 3, warmupSeconds: 0 };
    await load({ ...options, seconds: 2 });
    const rounds: Load[] = [];
    const signatures: number[] = [];
    for (let i = 0; i < 2; i += 1) {
      signatures.push((await runJson<{ perSecond: number }>('test/bench/baselines/jose.ts', ['3'])).perSecond);
      rounds.push(await load(options));
    }
    const signIns = combine(rounds);
    expectOnly('sign-in', signIns, ['2xx', '3xx']);
    return [
      ratioRow({
        id: '4',
        what: 'complete sign-ins (authorize with session and consent → token → ID token)',
        figure: signIns.okPerSecond,
        figureDetail: `p99 per request ${ms(signIns.p99)}`,
        baseline: mean(signatures),
        baselineDetail: '`jose` RS256 signatures alone',
        unit: '/s',
        least: 0.25,
      }),
    ];
  }

  /**
   * Row 10: the issue's peer, node-oidc-provider (`baselines/oidc-provider.ts`, in-memory store,
   * configured as ours is for the bench's client), against ours, in turns: complete sign-ins one
   * after the other on one connection (row 4's two requests, each side with a session whose
   * consent was given: ours seeded, the peer's walked once through its scripted login and
   * consent), then userinfo with a bearer token, the JWKS and discovery at 16 connections.
   */
  async row10(): Promise<Row[]> {
    const ours = this.#ctx.server.url;
    const ourToken = await oidcAccessToken(this.#ctx);
    const ourCookie = seededSession(this.#ctx);
    return withBaseline('oidc-provider', [], async (peer) => {
      const peerCookie = await peerSignIn(peer);
      const { verifier, challenge } = pkcePair();
      const signIns = (url: string, cookie: string): LoadOptions => ({ url, connections: 1, seconds: 2, requests: signInRequests(cookie, challenge, verifier) });
      const [mine, theirs] = await alternate(signIns(ours, ourCookie), signIns(peer, peerCookie), 2, 2, 1);
      expectOnly('sequential sign-ins', mine, ['2xx', '3xx']);
      expectOnly('node-oidc-provider sign-ins', theirs, ['2xx', '3xx']);
      const rows = [
        ratioRow({
          id: '10a',
          what: 'complete sign-ins one after the other (authorize with session and consent → token)',
          figure: mine.okPerSecond,
          figureDetail: `p99 per request ${ms(mine.p99)}`,
          baseline: theirs.okPerSecond,
          baselineDetail: `node-oidc-provider, in-memory store, p99 per request ${ms(theirs.p99)}`,
          unit: '/s',
          least: 1.2,
        }),
      ];

      /** A GET at 16 connections on both, each answer checked once first. */
      const compare = async (id: string, what: string, path: string, check: (body: unknown, base: string) => boolean, tokens?: [string, string]) => {
        const options = async (base: string, token: string | undefined): Promise<LoadOptions> => {
          const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
          const body = await getJson(`${base}${path}`, headers);
          if (!check(body, base)) throw new Error(`${base}${path} answered ${JSON.stringify(body).slice(0, 300)}`);
          return { url: `${base}${path}`, connections: 16, seconds: 1, headers };
        };
        const [a, b] = await alternate(await options(ours, tokens?.[0]), await options(peer, tokens?.[1]), 4, 1, 1);
        expectOnly(`${what}, ours`, a, ['2xx']);
        expectOnly(`${what}, node-oidc-provider`, b, ['2xx']);
        rows.push(
          ratioRow({ id, what, figure: a.okPerSecond, figureDetail: p99(a), baseline: b.okPerSecond, baselineDetail: `node-oidc-provider, ${p99(b)}`, unit: 'req/s', least: 1.0 }),
        );
      };
      const named = (body: unknown) => (body as { sub?: string; email?: string }).email !== undefined;
      // A fresh token at the peer: its in-memory store is a cache of 1,000 entries, and the
      // sign-ins above pushed the first sign-in's token out of it.
      const peerToken = await signInWith(peer, peerCookie);
      await compare('10b', '`GET /oidc/userinfo` (bearer), 16 connections', '/oidc/userinfo', named, [ourToken, peerToken]);
      await compare('10c', '`GET /oidc/jwks`, 16 connections', '/oidc/jwks', (body) => ((body as { keys?: unknown[] }).keys?.length ?? 0) > 0);
      await compare('10d', 'discovery (`/.well-known/openid-configuration`), 16 connections', '/.well-known/openid-configuration', (body, base) => (body as { issuer?: string }).issuer === base);
      // Refresh-token rotations one after the other, in turns (each side's chain carried on); last,
      // as their tokens push the peer's session out of its in-memory store.
      let ourRefresh = this.#ctx.seeded.oidcRefreshToken;
      let peerRefresh = await peerRefreshToken(peer);
      const ourRates: number[] = [];
      const peerRates: number[] = [];
      for (let round = 0; round < 3; round += 1) {
        const a = await rotations(ours, ourRefresh, 2);
        const b = await rotations(peer, peerRefresh, 2);
        ourRefresh = a.last;
        peerRefresh = b.last;
        // The first round warms both up.
        if (round > 0) {
          ourRates.push(a.perSecond);
          peerRates.push(b.perSecond);
        }
      }
      rows.push(
        ratioRow({
          id: '10e',
          what: 'refresh-token rotations one after the other (`grant_type=refresh_token`, public client)',
          figure: mean(ourRates),
          baseline: mean(peerRates),
          baselineDetail: 'node-oidc-provider, in-memory store, rotating as ours does',
          unit: '/s',
          least: 1.0,
        }),
      );

      return rows;
    });
  }

  /**
   * Row 5. Four people log in at once, each to their own account, again and again: enough to
   * keep the server's two scrypt slots busy, few enough that no account or address nears its
   * rate limit (a right password gives its try back). Counted as the baseline counts hashes:
   * what completes, over the time until the last one started before the deadline is answered.
   */
  async row5(): Promise<Row[]> {
    const ids = this.#ctx.seeded.loginIds;
    const stored = await storedHashParameters(this.#ctx.dataDir, ids[0] ?? '');
    await loginLoop(this.#ctx.server.url, ids, 1);
    const logins: number[] = [];
    const hashes: number[] = [];
    let p99 = 0;
    for (let i = 0; i < 3; i += 1) {
      hashes.push((await runJson<{ perSecond: number }>('test/bench/baselines/scrypt.ts', [...stored.map(String), '2', '3'])).perSecond);
      const round = await loginLoop(this.#ctx.server.url, ids, 4);
      logins.push(round.perSecond);
      p99 = Math.max(p99, round.p99);
    }
    return [
      ratioRow({
        id: '5',
        what: '`POST /login`',
        figure: mean(logins),
        figureDetail: `p99 ${ms(p99)}`,
        baseline: mean(hashes),
        baselineDetail: `scrypt N=${stored[0]}, r=${stored[1]}, p=${stored[2]} alone, 2 at a time`,
        unit: '/s',
        least: 0.9,
      }),
    ];
  }
}

/**
 * Logins in a closed loop, one worker per account, for `seconds`: at a few a second a fixed
 * duration cut short by a load generator would drop the logins in flight, which the baseline
 * never does. Throws on any answer but 200.
 */
async function loginLoop(base: string, ids: string[], seconds: number): Promise<{ perSecond: number; p99: number }> {
  const until = performance.now() + seconds * 1000;
  const started = performance.now();
  const latencies: number[] = [];
  await Promise.all(
    ids.map(async (id) => {
      while (performance.now() < until) {
        const sent = performance.now();
        const res = await fetch(`${base}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id, password: PASSWORD }) });
        if (res.status !== 200) throw new Error(`POST /login as ${id}: ${res.status} ${await res.text()}`);
        await res.arrayBuffer();
        latencies.push(performance.now() - sent);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { perSecond: latencies.length / ((performance.now() - started) / 1000), p99: latencies[Math.floor(latencies.length * 0.99)] ?? 0 };
}

/** N, r, p and the key length of an account's stored hash (`scrypt$N$r$p$salt$key`): what login runs. */
async function storedHashParameters(dataDir: string, id: string): Promise<number[]> {
  const db = openDatabase(loadConfig({ ...benchDatabaseEnv(), DATA_DIR: dataDir }));
  try {
    const row = (await db('profiles').where({ id }).first('password_hash')) as { password_hash: string } | undefined;
    const [scheme, n, r, p, , key] = (row?.password_hash ?? '').split('$');
    if (scheme !== 'scrypt' || !key) throw new Error(`no scrypt hash for ${id}`);
    return [Number(n), Number(r), Number(p), Buffer.from(key, 'base64url').length];
  } finally {
    await db.destroy();
  }
}
