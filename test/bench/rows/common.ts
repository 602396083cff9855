/** What every group of rows shares: the run's context, how baselines are started, how a row is made. */
import { startListening, type Started } from '../processes.ts';
import { residentBytes } from '../transfer.ts';
import type { Row } from '../report.ts';
import type { Load } from '../load.ts';
import type { Seeded } from '../setup.ts';

export interface BenchContext {
  /** The service, as `npm start` runs it, on the seeded data folder. */
  server: Started;
  dataDir: string;
  /** A copy of the seeded data folder, for row 9 to fill with 100 000 profiles. */
  largeDataDir: string;
  /** Starts the service, as `server` was, on another data folder. */
  startServer(dataDir: string): Promise<Started>;
  /** Where baseline servers may write (row 6). */
  scratchDir: string;
  seeded: Seeded;
}

/** Connections for request-rate rows: the 32 (row 3), for every JSON row alike. */
export const CONNECTIONS = 32;

export const ms = (value: number): string => `${value < 10 ? value.toFixed(1) : Math.round(value)} ms`;
export const p99 = (load: Load): string => `p99 ${ms(load.p99)}`;

export async function getJson(url: string, headers: Record<string, string> = {}): Promise<unknown> {
  const res = await fetch(url, { headers });
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** Starts a baseline server (`baselines/<name>.ts`), runs `work` against it (its URL, its process), and always stops it. */
export async function withBaseline<T>(name: string, args: string[], work: (url: string, started: Started) => Promise<T>): Promise<T> {
  const bare = await startListening(name, `test/bench/baselines/${name}.ts`, { args });
  try {
    return await work(bare.url, bare);
  } finally {
    await bare.stop();
  }
}

/** A row whose target is a least ratio of figure to baseline. */
export function ratioRow(row: Omit<Row, 'ratio' | 'target' | 'met'> & { least: number }): Row {
  const { least, ...rest } = row;
  const ratio = row.figure / row.baseline;
  return { ...rest, ratio, target: `≥ ${least}`, met: ratio >= least };
}

/** A process's resident memory with nothing running: the lowest of a second's samples. */
export async function restingBytes(pid: number): Promise<number> {
  let rest = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 20; i += 1) {
    rest = Math.min(rest, await residentBytes(pid));
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return rest;
}

/** The middle value (the upper one of an even count). */
export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
