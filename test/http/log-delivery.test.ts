/**
 * The log reaches its reader while the server runs, not only when 4 KiB of lines have piled up or
 * the process exits: a quiet server's last requests (and an error line before a crash that no
 * handler sees, such as the kernel's OOM kill) are on stdout within about a second.
 */
import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { childEnv, tempDir } from '../helpers/server.ts';
import { waitUntil } from '../helpers/wait.ts';

let dir: string | undefined;
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the log of a quiet server', () => {
  it('holds one request’s line on stdout while the server runs, and after it is killed', async () => {
    dir = await tempDir();
    const child = spawn(process.execPath, ['server/main.ts'], {
      env: await childEnv({ DATA_DIR: dir, PORT: '0', LOG_LEVEL: 'info' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    try {
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      await waitUntil(() => /Listening on http:\/\/\S+/.test(out), 'listening', 30_000);
      const url = /Listening on (http:\/\/\S+)/.exec(out)?.[1] ?? '';

      const res = await fetch(`${url}/tildeusername?first=Ada&last=Lovelace`);
      expect(res.status).toBe(200);
      // One line of about 200 bytes: far from the buffer's 4 KiB, so only the periodic flush writes it.
      await waitUntil(() => out.includes('"url":"/tildeusername?first=Ada&last=Lovelace"'), 'logged', 10_000);
      const line = out.split('\n').find((text) => text.includes('"url":"/tildeusername'));
      expect(JSON.parse(line ?? '{}')).toMatchObject({ level: 30, msg: 'request completed', res: { statusCode: 200 } });
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
  });
});
