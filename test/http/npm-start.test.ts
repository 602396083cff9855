import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { childEnv, tempDir } from '../helpers/server.ts';
import { waitUntil } from '../helpers/wait.ts';

/** True when a connection to `url` is refused (the server has closed its listening socket). */
function refusesConnections(url: URL): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(Number(url.port), url.hostname);
    probe.on('connect', () => {
      probe.destroy();
      resolve(false);
    });
    probe.on('error', () => resolve(true));
  });
}

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** `npm start`'s server (the TypeScript sources) on a new data folder: the process, its URL once it listens, all it printed so far, and its exit. */
async function startMain(env: Record<string, string>) {
  const dir = await tempDir();
  dirs.push(dir);
  const child = spawn(process.execPath, ['server/main.ts'], { env: await childEnv({ DATA_DIR: dir, PORT: '0', ...env }), stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const printed = { out: '' };
  const url = await new Promise<URL>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      printed.out += chunk.toString();
      const match = /Listening on (http:\/\/\S+)/.exec(printed.out);
      if (match?.[1]) resolve(new URL(match[1]));
    });
    child.on('exit', () => reject(new Error(`server exited before listening: ${printed.out}`)));
  });
  return { child, url, printed, exited };
}

describe('npm start', () => {
  it('on SIGTERM finishes the request in flight, then exits cleanly', async () => {
    const { child, url, exited } = await startMain({ LOG_LEVEL: 'warn' });
    // A login whose body has only half arrived when the signal comes.
    const body = JSON.stringify({ id: 'nobody@example.org', password: 'Some-Password1' });
    const socket = connect(Number(url.port), url.hostname);
    await new Promise<void>((resolve) => socket.on('connect', resolve));
    let response = '';
    // `Expect: 100-continue` makes the server say when it has taken the request in (an interim
    // "100 Continue"), so the signal comes once the request is in flight, not after a guessed wait.
    let takenIn: () => void = () => undefined;
    const inFlight = new Promise<void>((resolve) => (takenIn = resolve));
    const answered = new Promise<void>((resolve) =>
      socket.on('data', (chunk) => {
        response += chunk.toString();
        const interim = /^HTTP\/1\.1 100 Continue\r\n\r\n/.exec(response);
        if (interim) {
          response = response.slice(interim[0].length);
          takenIn();
        }
        if (response.includes('}')) resolve();
      }),
    );
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write(
      `POST /login HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    );
    await inFlight;
    child.kill('SIGTERM');
    // The server has handled the signal once it stops accepting connections.
    await waitUntil(() => refusesConnections(url), 'refusing connections');
    expect(child.exitCode).toBeNull();
    socket.write(body.slice(10));
    await Promise.race([answered, closed]);
    socket.end();

    expect(response).toMatch(/^HTTP\/1\.1 400 /);
    expect(response).toContain('Invalid username or password');
    expect(await exited).toBe(0);
  });

  // The log reaches its reader while the server runs, not only once 4 KiB of lines have piled up
  // or the process exits: a quiet server's last requests (and an error line before a kill no
  // handler sees, such as the kernel's OOM kill) are on stdout within about a second.
  it('writes a quiet server’s one request line to stdout while it runs', async () => {
    const { child, url, printed, exited } = await startMain({ LOG_LEVEL: 'info' });
    try {
      const res = await fetch(new URL('/tildeusername?first=Ada&last=Lovelace', url));
      expect(res.status).toBe(200);
      // One line of about 200 bytes: far from the buffer's 4 KiB, so only the periodic flush writes it.
      await waitUntil(() => printed.out.includes('"url":"/tildeusername?first=Ada&last=Lovelace"'), 'logged', 10_000);
      const line = printed.out.split('\n').find((text) => text.includes('"url":"/tildeusername'));
      expect(JSON.parse(line ?? '{}')).toMatchObject({ level: 30, msg: 'request completed', res: { statusCode: 200 } });
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
  });
});
