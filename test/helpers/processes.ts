/**
 * The service as separate processes (`node server/main.ts`, as `npm start` runs it), for tests
 * of what several processes of one install share. Each is stopped with SIGTERM by `stopAll`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { childEnv } from './server.ts';

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** What the process wrote, stdout and stderr. */
  output(): string;
}

const running = new Set<ChildProcess>();

/** Starts a server process and resolves with its address once it listens; rejects if it exits first. */
export function startServerProcess(env: NodeJS.ProcessEnv): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['server/main.ts'], { env: { PORT: '0', LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  child.on('exit', () => running.delete(child));
  let out = '';
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /Listening on (http:\/\/\S+)/.exec(out);
      if (match?.[1]) resolve({ url: match[1], child, output: () => out });
    });
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('exit', (code) => reject(new Error(`a server exited (${code}) before listening:\n${out}`)));
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

/** A port free right now, to start a server on it and restart it on the same one. */
export async function freePort(): Promise<number> {
  const probe = createNetServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
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
