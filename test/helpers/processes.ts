/**
 * The service as separate processes (`node server/main.ts`, as `npm start` runs it), for tests
 * of what several processes of one install share. Each is stopped with SIGTERM by `stopAll`.
 */
import { spawn, type ChildProcess } from 'node:child_process';

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
