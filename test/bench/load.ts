/**
 * HTTP load through autocannon, in this (the runner's) process: never in the server's. Each
 * measurement is preceded by a short warm-up on the same target, so the JIT, the SQLite page
 * cache and the connection pool are warm when the counting starts.
 */
import autocannon from 'autocannon';

export interface Load {
  /** Requests answered per second (any status). */
  perSecond: number;
  /** Responses with a 2xx status, per second. */
  okPerSecond: number;
  p50: number;
  p99: number;
  /** Every answer, by status class, and the connection errors and timeouts. */
  counts: { '2xx': number; '3xx': number; '4xx': number; '5xx': number; errors: number; timeouts: number };
  seconds: number;
}

export interface LoadOptions {
  url: string;
  connections: number;
  seconds: number;
  warmupSeconds?: number;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  requests?: autocannon.Request[];
  setupClient?: (client: autocannon.Client) => void;
}

function run(opts: LoadOptions, seconds: number): Promise<autocannon.Result> {
  return autocannon({
    url: opts.url,
    connections: opts.connections,
    duration: seconds,
    method: opts.method ?? 'GET',
    headers: opts.headers ?? {},
    ...(opts.body !== undefined ? { body: opts.body } : {}),
    ...(opts.requests ? { requests: opts.requests } : {}),
    ...(opts.setupClient ? { setupClient: opts.setupClient } : {}),
    timeout: 30,
  });
}

/** Warms up, then loads `url` with `connections` connections for `seconds` seconds. */
export async function load(opts: LoadOptions): Promise<Load> {
  const warmup = opts.warmupSeconds ?? 2;
  if (warmup > 0) await run(opts, warmup);
  const result = await run(opts, opts.seconds);
  const answered = result['1xx'] + result['2xx'] + result['3xx'] + result['4xx'] + result['5xx'];
  return {
    perSecond: answered / result.duration,
    okPerSecond: result['2xx'] / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    counts: {
      '2xx': result['2xx'],
      '3xx': result['3xx'],
      '4xx': result['4xx'],
      '5xx': result['5xx'],
      errors: result.errors,
      timeouts: result.timeouts,
    },
    seconds: result.duration,
  };
}

/** Loads summed: rates over the total time, the worst p99. */
export function combine(loads: Load[]): Load {
  const seconds = loads.reduce((n, l) => n + l.seconds, 0);
  const sum = (pick: (l: Load) => number) => loads.reduce((n, l) => n + pick(l), 0);
  const counts = { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0, errors: 0, timeouts: 0 };
  for (const l of loads) for (const key of Object.keys(counts) as Array<keyof typeof counts>) counts[key] += l.counts[key];
  return {
    perSecond: sum((l) => l.perSecond * l.seconds) / seconds,
    okPerSecond: sum((l) => l.okPerSecond * l.seconds) / seconds,
    p50: Math.max(...loads.map((l) => l.p50)),
    p99: Math.max(...loads.map((l) => l.p99)),
    counts,
    seconds,
  };
}

/**
 * A figure and its baseline measured in turns (a warm-up of `warmupSeconds` each, then `rounds`
 * rounds of `seconds` each), so that anything else the machine does meanwhile weighs on both alike.
 * Each round swaps which goes first (AB BA AB …): whatever one load leaves behind for the next (the
 * generator's garbage, a core just woken) falls on each side as often, with an even count of rounds.
 */
export async function alternate(a: LoadOptions, b: LoadOptions, rounds = 4, seconds = 2, warmupSeconds = 2): Promise<[Load, Load]> {
  await load({ ...a, seconds: warmupSeconds, warmupSeconds: 0 });
  await load({ ...b, seconds: warmupSeconds, warmupSeconds: 0 });
  const first: Load[] = [];
  const second: Load[] = [];
  for (let i = 0; i < rounds; i += 1) {
    const turns: Array<[LoadOptions, Load[]]> = [
      [a, first],
      [b, second],
    ];
    if (i % 2 === 1) turns.reverse();
    for (const [options, results] of turns) results.push(await load({ ...options, seconds, warmupSeconds: 0 }));
  }
  return [combine(first), combine(second)];
}

/** Throws when a load met an answer it should not have: the figure would measure errors. */
export function expectOnly(name: string, result: Load, allowed: Array<'2xx' | '3xx'>): void {
  const bad = (['2xx', '3xx', '4xx', '5xx'] as const).filter((k) => !allowed.includes(k as '2xx') && result.counts[k] > 0);
  if (bad.length > 0 || result.counts.errors > 0) {
    throw new Error(`${name}: unexpected answers ${JSON.stringify(result.counts)}`);
  }
}

/**
 * The `Set-Cookie` value of `name` in the headers autocannon's parser reports (a flat
 * `[name, value, name, value…]` array, whatever its type declaration says).
 */
export function cookieFromRawHeaders(raw: unknown, name: string): string | undefined {
  if (!Array.isArray(raw)) return undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (String(raw[i]).toLowerCase() !== 'set-cookie') continue;
    const match = new RegExp(`^${name.replace(/\./g, '\\.')}=([^;]*)`).exec(String(raw[i + 1]));
    if (match?.[1]) return decodeURIComponent(match[1]);
  }
  return undefined;
}
