import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { childEnv, tempDir } from '../helpers/server.ts';

let dir: string | undefined;
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('npm start', () => {
  it('on SIGTERM finishes the request in flight, then exits cleanly', async () => {
    dir = await tempDir();
    const child = spawn(process.execPath, ['server/main.ts'], {
      env: childEnv({ DATA_DIR: dir, PORT: '0', LOG_LEVEL: 'warn' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const url = await new Promise<URL>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const match = /Listening on (http:\/\/\S+)/.exec(out);
        if (match?.[1]) resolve(new URL(match[1]));
      });
      child.on('exit', () => reject(new Error(`server exited before listening: ${out}`)));
    });

    // A login whose body has only half arrived when the signal comes.
    const body = JSON.stringify({ id: 'nobody@example.org', password: 'Some-Password1' });
    const socket = connect(Number(url.port), url.hostname);
    await new Promise<void>((resolve) => socket.on('connect', resolve));
    let response = '';
    const answered = new Promise<void>((resolve) =>
      socket.on('data', (chunk) => {
        response += chunk.toString();
        if (response.includes('}')) resolve();
      }),
    );
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write(
      `POST /login HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(child.exitCode).toBeNull();
    socket.write(body.slice(10));
    await Promise.race([answered, closed]);
    socket.end();

    expect(response).toMatch(/^HTTP\/1\.1 400 /);
    expect(response).toContain('Invalid username or password');
    expect(await exited).toBe(0);
  });
});
