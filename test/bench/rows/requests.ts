/**
 * Rows 1, 2, 3 and 9: request rates of JSON paths at 32 connections. A figure and its baseline
 * are measured in turns (`alternate`), each server in its own process.
 */
import type autocannon from 'autocannon';
import { REFRESH_TOKEN_COOKIE } from '../../../shared/index.ts';
import { cookieHeader } from '../../helpers/cookies.ts';
import { alternate, cookieFromRawHeaders, expectOnly, load, type Load, type LoadOptions } from '../load.ts';
import type { Row } from '../report.ts';
import { addProfiles, TILDE_ANSWER, TILDE_QUERY } from '../setup.ts';
import { CONNECTIONS, getJson, p99, ratioRow, withBaseline, type BenchContext } from './common.ts';
import { oidcAccessToken } from './sign-in.ts';

/** Seconds per measurement when a row has no baseline to take turns with (row 3). */
const SECONDS = 6;

export class RequestRows {
  readonly #ctx: BenchContext;
  /** Row 1's two loads; row 3 compares with its bare handler too. */
  #row1: Promise<{ rest: Load; bare: Load }> | null = null;

  constructor(ctx: BenchContext) {
    this.#ctx = ctx;
  }

  /** `GET /tildeusername` on a server, its answer checked once before it is loaded. */
  async #tildeRequest(base: string): Promise<LoadOptions> {
    const url = `${base}/tildeusername?first=${TILDE_QUERY.first}&last=${TILDE_QUERY.last}`;
    const answer = (await getJson(url)) as { username?: string };
    if (answer.username !== TILDE_ANSWER) throw new Error(`${url} answered ${JSON.stringify(answer)}`);
    return { url, connections: CONNECTIONS, seconds: SECONDS };
  }

  /** The REST path and the bare Express handler (same service function, same database), in turns. */
  #restAndBare(): Promise<{ rest: Load; bare: Load }> {
    this.#row1 ??= (async () => {
      const ours = await this.#tildeRequest(this.#ctx.server.url);
      const [rest, bare] = await withBaseline('express', [this.#ctx.dataDir], async (url) => alternate(ours, await this.#tildeRequest(url)));
      expectOnly('GET /tildeusername', rest, ['2xx']);
      expectOnly('bare express', bare, ['2xx']);
      return { rest, bare };
    })();
    return this.#row1;
  }

  async row1(): Promise<Row[]> {
    const { rest, bare } = await this.#restAndBare();
    return [
      ratioRow({
        id: '1',
        what: '`GET /tildeusername` through the REST path',
        figure: rest.okPerSecond,
        figureDetail: p99(rest),
        baseline: bare.okPerSecond,
        baselineDetail: `bare Express, ${p99(bare)}`,
        unit: 'req/s',
        least: 0.85,
      }),
    ];
  }

  /** Row 2: `accounts.tildeUsername` over `/trpc`, against a bare tRPC router with the same procedure. */
  async row2(): Promise<Row[]> {
    const input = encodeURIComponent(JSON.stringify(TILDE_QUERY));
    const request = async (base: string): Promise<LoadOptions> => {
      const url = `${base}/trpc/accounts.tildeUsername?input=${input}`;
      const answer = (await getJson(url)) as { result?: { data?: { username?: string } } };
      if (answer.result?.data?.username !== TILDE_ANSWER) throw new Error(`${url} answered ${JSON.stringify(answer)}`);
      return { url, connections: CONNECTIONS, seconds: SECONDS };
    };
    const ours = await request(this.#ctx.server.url);
    const [figure, bare] = await withBaseline('trpc', [this.#ctx.dataDir], async (url) => alternate(ours, await request(url)));
    expectOnly('tRPC', figure, ['2xx']);
    expectOnly('bare tRPC', bare, ['2xx']);
    return [
      ratioRow({
        id: '2',
        what: '`accounts.tildeUsername` through the tRPC HTTP endpoint',
        figure: figure.okPerSecond,
        figureDetail: p99(figure),
        baseline: bare.okPerSecond,
        baselineDetail: `bare tRPC router, ${p99(bare)}`,
        unit: 'req/s',
        least: 0.9,
      }),
    ];
  }

  /**
   * Row 3. A refresh token is single-use (each refresh rotates it and the old one is refused), so
   * each connection refreshes a session of its own, sending the cookie the previous answer set,
   * as a browser does. The warm-up and the measurement use different sessions: a rotation whose
   * answer the stopped warm-up never read cannot spoil the measurement.
   */
  async row3(): Promise<Row[]> {
    const { bare } = await this.#restAndBare();
    const sessions = [...this.#ctx.seeded.refreshTokens];
    const half = sessions.length / 2;
    const refreshing = (offset: number): LoadOptions => {
      let next = 0;
      return {
        url: `${this.#ctx.server.url}/refreshToken`,
        connections: CONNECTIONS,
        method: 'POST',
        seconds: SECONDS,
        warmupSeconds: 0,
        setupClient: (client: autocannon.Client) => {
          const slot = offset + (next++ % half);
          const send = () => client.setHeaders({ cookie: cookieHeader([[REFRESH_TOKEN_COOKIE, encodeURIComponent(sessions[slot] ?? '')]]) });
          send();
          client.on('headers', (info: unknown) => {
            const fresh = cookieFromRawHeaders((info as { headers?: unknown }).headers, REFRESH_TOKEN_COOKIE);
            if (fresh) {
              sessions[slot] = fresh;
              send();
            }
          });
        },
      };
    };
    await load({ ...refreshing(0), seconds: 2 });
    const refresh = await load(refreshing(half));
    expectOnly('POST /refreshToken', refresh, ['2xx']);

    const token = await oidcAccessToken(this.#ctx);
    const userinfo = await load({ url: `${this.#ctx.server.url}/oidc/userinfo`, connections: CONNECTIONS, seconds: SECONDS, headers: { authorization: `Bearer ${token}` } });
    expectOnly('GET /oidc/userinfo', userinfo, ['2xx']);

    const row = (id: string, what: string, figure: Load): Row => ({
      id,
      what,
      figure: figure.okPerSecond,
      figureDetail: p99(figure),
      baseline: bare.okPerSecond,
      baselineDetail: 'row 1 bare handler',
      unit: 'req/s',
      ratio: figure.okPerSecond / bare.okPerSecond,
      target: 'reported; p99 < 50 ms at 32 connections',
      met: figure.p99 < 50,
    });
    return [row('3a', '`POST /refreshToken` (refresh cookie, rotated)', refresh), row('3b', '`GET /oidc/userinfo` (bearer)', userinfo)];
  }

  /**
   * Row 9: a second server on a copy of the data folder with 99 900 profiles more (100 000 in
   * all), loaded as row 1 in turns with the first (100 profiles).
   */
  async row9(): Promise<Row[]> {
    await addProfiles(this.#ctx.largeDataDir, 100_000 - 100);
    const big = await this.#ctx.startServer(this.#ctx.largeDataDir);
    let small: Load;
    let large: Load;
    try {
      [large, small] = await alternate(await this.#tildeRequest(big.url), await this.#tildeRequest(this.#ctx.server.url));
    } finally {
      await big.stop();
    }
    expectOnly('GET /tildeusername, 100 000 profiles', large, ['2xx']);
    return [
      ratioRow({
        id: '9',
        what: 'row 1 with 100 000 profiles in the database',
        figure: large.okPerSecond,
        figureDetail: p99(large),
        baseline: small.okPerSecond,
        baselineDetail: `100 profiles, ${p99(small)}`,
        unit: 'req/s',
        least: 0.8,
      }),
    ];
  }
}
