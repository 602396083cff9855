/**
 * The metrics of the process rather than of one app: Node's and the process's own (prom-client's
 * default metrics: CPU, memory, event-loop delay, garbage collection, handles) and the build
 * information. One set per process, in a registry of its own (never prom-client's global one), made
 * when the first app with metrics starts: the test suite runs many apps in one process, and each
 * scrape shows them next to its own app's.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { ROOT } from '../root.ts';
import { PREFIX } from './names.ts';

let shared: Registry | null = null;

/** The process's registry, made on first use. */
export function processRegistry(): Registry {
  if (shared) return shared;
  const registry = new Registry();
  // `nodejs_eventloop_lag_*` among them: the delay, from perf_hooks' monitorEventLoopDelay.
  collectDefaultMetrics({ register: registry });
  const info = new Gauge({
    name: `${PREFIX}build_info`,
    help: 'Always 1: the version of the service, its git revision (empty when not run from a git checkout) and the Node.js version.',
    labelNames: ['version', 'revision', 'node_version'],
    registers: [registry],
  });
  info.set({ ...buildInfo(), node_version: process.versions.node }, 1);
  shared = registry;
  return registry;
}


/** The version in package.json and the commit checked out, read once at start (never a command run). */
export function buildInfo(root = ROOT): { version: string; revision: string } {
  let version = '';
  try {
    version = String((JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version?: unknown }).version ?? '');
  } catch {
    // A copy of the service without its package.json: the version stays empty.
  }
  return { version, revision: gitRevision(path.join(root, '.git')) };
}

/** The commit `HEAD` names in a git folder (a branch's ref, loose or packed, or a detached commit); empty when unknown. */
function gitRevision(gitDir: string): string {
  const read = (file: string) => {
    try {
      return readFileSync(path.join(gitDir, file), 'utf8').trim();
    } catch {
      return '';
    }
  };
  const head = read('HEAD');
  const ref = /^ref: (refs\/[\w./-]+)$/.exec(head)?.[1];
  if (!ref) return /^[0-9a-f]{40}$/.test(head) ? head : '';
  const loose = read(ref);
  if (/^[0-9a-f]{40}$/.test(loose)) return loose;
  const packed = read('packed-refs')
    .split('\n')
    .find((line) => line.endsWith(` ${ref}`));
  return packed?.slice(0, 40) ?? '';
}
