/**
 * Rows 4 and 5: complete sign-ins through the OpenID Connect provider, against RS256 signatures
 * alone; logins, against scrypt alone. Each baseline runs in a process of its own, in turns with
 * the load on the service.
 */
import type autocannon from 'autocannon';
import { decodeProtectedHeader } from 'jose';
import { openDatabase } from '../../../db/knex.ts';
import { loadConfig } from '../../../server/config.ts';
import { ACCESS_TOKEN_COOKIE } from '../../../shared/index.ts';
import { combine, expectOnly, load, type Load, type LoadOptions } from '../load.ts';
import { runJson } from '../processes.ts';
import type { Row } from '../report.ts';
import { CLIENT_ID, PASSWORD, pkcePair, REDIRECT_URI, benchDatabaseEnv } from '../setup.ts';
import { ms, ratioRow, type BenchContext } from './common.ts';

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

const tokens = new WeakMap<BenchContext, Promise<string>>();

/** One sign-in by hand, checked end to end (a code at once, an RS256 ID token); its access token. */
export function oidcAccessToken(ctx: BenchContext): Promise<string> {
  let token = tokens.get(ctx);
  if (!token) {
    token = (async () => {
      const { verifier, challenge } = pkcePair();
      const cookie = `${ACCESS_TOKEN_COOKIE}=${ctx.seeded.signer.accessToken}`;
      const authorize = await fetch(`${ctx.server.url}${authorizePath(challenge)}`, { headers: { cookie }, redirect: 'manual' });
      const code = new URL(authorize.headers.get('location') ?? 'http://x').searchParams.get('code');
      if (authorize.status !== 303 || !code) throw new Error(`authorize: ${authorize.status} ${authorize.headers.get('location')}`);
      const res = await fetch(`${ctx.server.url}/oidc/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: tokenForm(code, verifier),
      });
      const answer = (await res.json()) as { access_token?: string; id_token?: string };
      if (!answer.access_token || !answer.id_token || decodeProtectedHeader(answer.id_token).alg !== 'RS256') {
        throw new Error(`token: ${res.status} ${JSON.stringify(answer)}`);
      }
      return answer.access_token;
    })();
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
    const requests: autocannon.Request[] = [
      {
        method: 'GET',
        path: authorizePath(challenge),
        headers: { cookie: `${ACCESS_TOKEN_COOKIE}=${this.#ctx.seeded.signer.accessToken}` },
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
