/**
 * The service as separate processes (`node server/main.ts`, as `npm start` runs it), for tests
 * of what several processes of one install share. Each is stopped with SIGTERM by `stopAll`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer as createNetServer } from 'node:net';
import { childEnv } from './server.ts';

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** What the process wrote, stdout and stderr. */
  output(): string;
}

const running = new Set<ChildProcess>();

/** Starts a server process and resolves with its address once it listens; rejects if it exits first. */
export async function startServerProcess(env: NodeJS.ProcessEnv): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['server/main.ts'], { env: { PORT: '0', LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  child.on('exit', () => running.delete(child));
  const { url, output } = await listening(child, 'a server');
  return { url, child, output };
}

/**
 * The address a started server (`npm start`, the bundle, `server/main.ts`) prints once it
 * listens, read from its output; rejects, with that output, if the process exits first.
 */
export function listening(child: ChildProcess, what: string): Promise<{ url: string; output: () => string }> {
  let out = '';
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /Listening on (http:\/\/\S+)/.exec(out);
      if (match?.[1]) resolve({ url: match[1], output: () => out });
    });
    child.stderr?.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('exit', (code) => reject(new Error(`${what} exited (${code}) before listening:\n${out}`)));
  });
}

/** Stops every process started here (SIGTERM: they finish what is in flight) and waits for them. */
export async function stopAll(): Promise<void> {
  await Promise.all(
    [...running].map((child) => {
      const exited = new Promise((resolve) => child.on('exit', resolve));
      child.kill('SIGTERM');
      return exited;
    }),
  );
}

/**
 * A port free right now, to start a server on it and restart it on the same one. It is taken
 * below the kernel's ephemeral range, so that no other test's server on port 0 and no outgoing
 * connection can be given it between the probe and the (re)start.
 */
export async function freePort(): Promise<number> {
  const low = await ephemeralLow();
  for (;;) {
    const port = 10_000 + Math.floor(Math.random() * (low - 10_000));
    if (await isFree(port)) return port;
  }
}

async function ephemeralLow(): Promise<number> {
  const range = await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').catch(() => '32768');
  const low = Number(range.trim().split(/\s+/)[0]);
  return Number.isInteger(low) && low > 11_000 ? low : 32_768;
}

function isFree(port: number): Promise<boolean> {
  const probe = createNetServer();
  return new Promise((resolve) => {
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/**
 * `node server/main.ts` on a data folder and a fixed port (so that it can be restarted where
 * clients expect it, as after a crash), resolving once it listens.
 */
export async function startOnPort(dataDir: string, port: number): Promise<ChildProcess> {
  const proc = spawn(process.execPath, ['server/main.ts'], {
    env: await childEnv({ DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    proc.stdout!.on('data', (data: Buffer) => {
      output += data.toString();
      if (output.includes('Listening on')) resolve();
    });
    proc.stderr!.on('data', (data: Buffer) => (output += data.toString()));
    proc.on('exit', (code) => reject(new Error(`server exited (${code}): ${output}`)));
  });
  return proc;
}

/** Kills a server process as a crash would (SIGKILL: nothing runs on the way out), and waits for it. */
export async function killHard(proc: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  proc.kill('SIGKILL');
  await exited;
}
