/**
 * Reading the metrics as Prometheus reads them: the text format
 * (https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format).
 *
 * Every scrape is parsed whole by parse-prometheus-text-format, which throws on any line
 * Prometheus would refuse, and its families and types must be the ones read here. The values are
 * read by `read` below, after the format's rules: no JavaScript parser reads both labelled
 * histograms and NaN (parse-prometheus-text-format folds every labelled histogram into one series,
 * its issue 13; prom2javascript refuses `NaN`, which prom-client writes for the event-loop
 * delay's mean when no delay was sampled since the last scrape).
 */
import { createRequire } from 'node:module';
import { expect } from 'vitest';

export type Labels = Record<string, string>;
export interface Sample {
  labels: Labels;
  value: number;
}
export interface HistogramSample {
  labels: Labels;
  /** Cumulative counts by upper bound (`le`), `+Inf` included. */
  buckets: Record<string, number>;
  sum: number;
  count: number;
}
export interface Family {
  type: string;
  help: string;
  samples: Sample[];
  histograms: HistogramSample[];
}

/** The parser ships no types: one function from the text to its families. */
const validate = createRequire(import.meta.url)('parse-prometheus-text-format') as (text: string) => Array<{ name: string; type: string }>;

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)/y;

/** A sample value: a float, or NaN, +Inf, -Inf in any letter case (as Go's ParseFloat reads them). */
function number(text: string): number {
  const word = text.toLowerCase();
  if (word === 'nan') return Number.NaN;
  if (word === '+inf' || word === 'inf') return Number.POSITIVE_INFINITY;
  if (word === '-inf') return Number.NEGATIVE_INFINITY;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new Error(`not a sample value: ${text}`);
  return Number(text);
}

function labelsOf(text: string | undefined): Labels {
  const labels: Labels = {};
  if (!text) return labels;
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const match = LABEL.exec(text);
    if (!match) throw new Error(`bad labels: {${text}}`);
    labels[match[1] ?? ''] = (match[2] ?? '').replace(/\\(.)/g, (_all, c: string) => (c === 'n' ? '\n' : c));
  }
  return labels;
}

/** The text format's families: `# TYPE` and `# HELP` lines, samples, histograms grouped by their labels without `le`. */
export function read(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const family = (name: string): Family => {
    let found = families.get(name);
    if (!found) families.set(name, (found = { type: 'untyped', help: '', samples: [], histograms: [] }));
    return found;
  };
  for (const line of text.split('\n')) {
    const meta = /^#\s+(HELP|TYPE)\s+(\S+)\s?(.*)$/.exec(line);
    if (meta) {
      if (meta[1] === 'TYPE') family(meta[2] ?? '').type = meta[3] ?? '';
      else family(meta[2] ?? '').help = (meta[3] ?? '').replace(/\\(.)/g, (_all, c: string) => (c === 'n' ? '\n' : c));
      continue;
    }
    if (line.trim() === '' || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line.trim());
    if (!match) throw new Error(`not a sample line: ${line}`);
    const name = match[1] ?? '';
    const labels = labelsOf(match[2]);
    const value = number(match[3] ?? '');
    const base = name.replace(/_(bucket|sum|count)$/, '');
    const histogram = families.get(base);
    if (base !== name && histogram?.type === 'histogram') {
      const { le, ...own } = labels;
      const key = JSON.stringify(Object.entries(own).sort());
      let series = histogram.histograms.find((h) => JSON.stringify(Object.entries(h.labels).sort()) === key);
      if (!series) histogram.histograms.push((series = { labels: own, buckets: {}, sum: 0, count: 0 }));
      if (name.endsWith('_bucket')) series.buckets[le ?? ''] = value;
      else if (name.endsWith('_sum')) series.sum = value;
      else series.count = value;
      continue;
    }
    family(name).samples.push({ labels, value });
  }
  return families;
}

export class Scrape {
  readonly families: Map<string, Family>;

  constructor(text: string) {
    this.families = read(text);
    // The same families, of the same types, as a parser of the format's own finds.
    const parsed = validate(text).map((f) => [f.name, f.type.toLowerCase()]);
    expect(Object.fromEntries(parsed)).toEqual(Object.fromEntries([...this.families].map(([name, f]) => [name, f.type])));
  }

  family(name: string): Family {
    const family = this.families.get(name);
    if (!family) throw new Error(`no metric ${name} in the scrape`);
    return family;
  }

  has(name: string): boolean {
    return this.families.has(name);
  }

  /** The series of a counter or gauge whose labels include `labels`. */
  series(name: string, labels: Labels = {}): Sample[] {
    return this.family(name).samples.filter((sample) => matches(sample.labels, labels));
  }

  /** The series of a histogram whose labels include `labels`. */
  histograms(name: string, labels: Labels = {}): HistogramSample[] {
    const family = this.family(name);
    if (family.type !== 'histogram') throw new Error(`${name} is a ${family.type}, not a histogram`);
    return family.histograms.filter((sample) => matches(sample.labels, labels));
  }

  /** A counter's or gauge's value, summed over the series matching `labels` (0 when none does). */
  value(name: string, labels: Labels = {}): number {
    return this.series(name, labels).reduce((sum, sample) => sum + sample.value, 0);
  }

  /** A histogram's observation count, summed over the series matching `labels`. */
  count(name: string, labels: Labels = {}): number {
    return this.histograms(name, labels).reduce((sum, sample) => sum + sample.count, 0);
  }

  /** Every label value of every series, with where it was found. */
  *labels(): Generator<{ metric: string; name: string; value: string }> {
    for (const [metric, family] of this.families) {
      for (const sample of [...family.samples, ...family.histograms]) for (const [name, value] of Object.entries(sample.labels)) yield { metric, name, value };
    }
  }
}

const matches = (have: Labels, want: Labels) => Object.entries(want).every(([key, value]) => have[key] === value);

/** Reads a scrape's text (checked by both parsers). */
export function parse(text: string): Scrape {
  return new Scrape(text);
}

/** Scrapes the listener at `url`: checks the answer is Prometheus' text format, and reads it. */
export async function scrape(url: string): Promise<Scrape> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  return parse(await res.text());
}
