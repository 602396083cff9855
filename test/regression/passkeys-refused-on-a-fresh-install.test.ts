/**
 * Found in review of the account pages: on a fresh install (`npm start`, no `BASE_URL`) the
 * service's address was `http://127.0.0.1:3000`, so every mailed link and redirect led there,
 * and browsers refuse passkeys on an IP address: the issue's own walk-through (add a passkey,
 * sign in with it) could not work. A loopback install's address is now `http://localhost:PORT`,
 * which reaches the same socket, and the passkeys' RP ID follows it.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { loadConfig } from '../../server/config.ts';
import { childEnv } from '../helpers/server.ts';

it('defaults BASE_URL to localhost on a loopback install, and to the host otherwise', () => {
  expect(loadConfig({})).toMatchObject({ baseUrl: 'http://localhost:3000', webUrl: 'http://localhost:3000/account' });
  expect(loadConfig({}).webauthn).toMatchObject({ rpId: 'localhost' });
  expect(loadConfig({ HOST: '::1', PORT: '8080' }).baseUrl).toBe('http://localhost:8080');
  expect(loadConfig({ HOST: '10.0.0.5' }).baseUrl).toBe('http://10.0.0.5:3000');
  expect(loadConfig({ BASE_URL: 'https://review.example.org' }).baseUrl).toBe('https://review.example.org');
});

it('tells a person who ran npm start where to go and where the mail is', async () => {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'fresh-install-'));
  try {
    const child = spawn(process.execPath, ['server/main.ts'], { env: await childEnv({ DATA_DIR: dataDir, PORT: '0' }), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    await new Promise<void>((resolve, reject) => {
      child.on('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
      const timer = setInterval(() => {
        if (/Mail is written to/.test(out)) {
          clearInterval(timer);
          resolve();
        }
      }, 50);
    });
    child.kill('SIGTERM');
    expect(out).toMatch(/^Listening on http:\/\/127\.0\.0\.1:\d+$/m);
    expect(out).toMatch(/^Open http:\/\/localhost:0\/ in a browser \(the account pages: http:\/\/localhost:0\/account\)$/m);
    expect(out).toContain(`Mail is written to ${path.join(dataDir, 'outbox')}`);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});
