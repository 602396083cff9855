/**
 * The child processes and the temporary folder of one bench run. Everything started here is
 * registered, and `cleanup()` stops it and removes the folder whatever ends the run: success,
 * an exception, Ctrl-C or SIGTERM.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** The repository's root: every script is started from it, as `npm run` would. */
export const ROOT = path.resolve(import.meta.dirname, '../..');

const children = new Set<ChildProcess>();
let workDir: string | null = null;
let started = 0;

/** The run's temporary folder (created on first use). */
export function tempDir(): string {
  workDir ??= mkdtempSync(path.join(tmpdir(), 'service-bench-'));
  return workDir;
}

/** A port the system says is free now, for a child that must know its own address before it listens. */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

export interface Started {
  url: string;
  pid: number;
  /** Where its stdout and stderr go. */
  log: string;
  /** SIGTERM, then SIGKILL after 10 s; resolves once it has exited (a CPU profile is written on exit). */
  stop(): Promise<void>;
}

/**
 * Starts `node <script> …args` from the repository's root with its output in a log file, and
 * waits for the `Listening on <url>` line the server (and every baseline server) prints.
 */
export async function startListening(
  name: string,
  script: string,
  opts: { args?: string[]; env?: Record<string, string>; nodeFlags?: string[] } = {},
): Promise<Started> {
  // Numbered: a name started twice gets a log of its own, and its old `Listening on` line cannot be mistaken for the new one.
  const log = path.join(tempDir(), `${name}-${(started += 1)}.log`);
  const fd = openSync(log, 'wx');
  const child = spawn(process.execPath, [...(opts.nodeFlags ?? []), script, ...(opts.args ?? [])], {
    cwd: ROOT,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  children.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => children.delete(child));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };

  const deadline = Date.now() + 60_000;
  for (;;) {
    const text = readFileSync(log, 'utf8');
    const url = /Listening on (\S+)/.exec(text)?.[1];
    if (url && child.pid !== undefined) return { url, pid: child.pid, log, stop };
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`${name} did not start:\n${text.slice(-2000)}`);
    }
    await sleep(50);
  }
}

/** Runs `node <script> …args` to completion and parses the one JSON line it prints. */
export async function runJson<T>(script: string, args: string[] = []): Promise<T> {
  const child = spawn(process.execPath, [script, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(child);
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  children.delete(child);
  if (code !== 0) throw new Error(`${script} exited with ${code}`);
  return JSON.parse(out.trim().split('\n').at(-1) ?? 'null') as T;
}

/** Stops every child still running and removes the temporary folder. Safe to call twice. */
export async function cleanup(): Promise<void> {
  await Promise.all(
    [...children].map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
          child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
  children.clear();
  removeWorkDir();
}

function removeWorkDir(): void {
  if (workDir) rmSync(workDir, { recursive: true, force: true });
  workDir = null;
}

/**
 * Cleans up on Ctrl-C and SIGTERM, and, as a last resort when the process exits some other way,
 * kills what is left and removes the folder synchronously.
 */
export function cleanUpOnExit(): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\n${signal}: stopping the bench and cleaning up\n`);
      void cleanup().finally(() => process.exit(130));
    });
  }
  process.once('exit', () => {
    for (const child of children) child.kill('SIGKILL');
    removeWorkDir();
  });
}
