/** The bench's output: the machine, one Markdown table, and the same as JSON. */
import { writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';

export interface Row {
  /** The issue's row number, with a letter where one row has two figures. */
  id: string;
  what: string;
  figure: number;
  baseline: number;
  unit: string;
  /** Shown after the figure (a p99, a peak), and kept in the JSON. */
  figureDetail?: string;
  baselineDetail?: string;
  /** figure / baseline. */
  ratio: number;
  target: string;
  met: boolean;
  /** What was measured when this row is not met (or anything a reader must know about it). */
  note?: string;
}

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  node: string;
  platform: string;
  /** The 1-minute load average when the bench started: other work on the machine disturbs timings. */
  loadAtStart: number;
}

export function machine(): Machine {
  const cpu = cpus();
  return {
    cpu: cpu[0]?.model.trim() ?? 'unknown',
    cores: cpu.length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    loadAtStart: Math.round((loadavg()[0] ?? 0) * 100) / 100,
  };
}

const number = (value: number): string =>
  value >= 100 ? Math.round(value).toLocaleString('en-US') : value >= 10 ? value.toFixed(1) : value.toFixed(2);

const cell = (value: number, unit: string, detail?: string) => `${number(value)} ${unit}${detail ? ` (${detail})` : ''}`;

export function markdown(m: Machine, rows: Row[], notes: string[], seconds: number): string {
  const lines = [
    `Machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, Node ${m.node}, ${m.platform}; load average at start ${m.loadAtStart}; the bench took ${Math.round(seconds)} s.`,
    '',
    '| # | what | figure | baseline | ratio | target | met |',
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.id} | ${r.what} | ${cell(r.figure, r.unit, r.figureDetail)} | ${cell(r.baseline, r.unit, r.baselineDetail)} | ${r.ratio.toFixed(2)} | ${r.target} | ${r.met ? 'met' : '**not met**'} |`,
    ),
    '',
    ...notes.map((n) => `- ${n}`),
    ...rows.filter((r) => r.note).map((r) => `- Row ${r.id}: ${r.note}`),
  ];
  return lines.join('\n');
}

export async function writeJson(file: string, m: Machine, rows: Row[], notes: string[], seconds: number): Promise<void> {
  await writeFile(file, `${JSON.stringify({ machine: m, seconds: Math.round(seconds), rows, notes }, null, 2)}\n`);
}
