/**
 * `npm start` runs the bundle `server/build.ts` makes (`dist/server/`), not the TypeScript the
 * other tests run. These start it as the start script does and ask it for what depends on where
 * the code is or on what it loads late: pages (their templates and assets are read from the
 * service's folder, not beside the module), the API document (built at its first request) and the
 * reference page's stylesheet, tRPC, a password check (the common-password list, loaded at the
 * first one). The bundle's static imports leave the optional back ends out, and `npm start`
 * stops with the signal npm forwards (the script's shell is replaced by the server: a shell left
 * in between would die and orphan it).
 */
import { spawn, execFile } from 'node:child_process';
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.ts';
import { buildOpenApiDocument } from '../../server/http/openapi.ts';
import { Client } from '../helpers/http.ts';
import { listening } from '../helpers/processes.ts';
import { childEnv, tempDir } from '../helpers/server.ts';
import { startCommand } from '../helpers/start-command.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);
// Building is under a second; starting migrates a new database.
const LONG = 60_000;

let dir: string | undefined;
let child: ReturnType<typeof spawn> | undefined;
let url = '';
let env: NodeJS.ProcessEnv = {};

beforeAll(async () => {
  // Two builds at once, as two `npm start`s on one machine would run them: both finish, and
  // neither leaves a file written aside.
  await Promise.all([run(process.execPath, ['server/build.ts'], { cwd: ROOT }), run(process.execPath, ['server/build.ts'], { cwd: ROOT })]);
  dir = await tempDir();
  const start = startCommand();
  env = await childEnv({ DATA_DIR: dir, PORT: '0', LOG_LEVEL: 'warn', ...start.env });
  child = spawn(process.execPath, [...start.flags, start.script], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  ({ url } = await listening(child, 'the bundle'));
}, LONG);

afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child!.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The packages the bundle must not import at start: loaded only when configured or first used. */
const LATE = ['pg', 'prom-client', '@aws-sdk/client-s3', '@aws-sdk/lib-storage', 'qrcode', 'yazl', 'nodemailer', '@simplewebauthn/server', 'rate-limiter-flexible', '@zxcvbn-ts/language-common'];

/** The files `main.js` imports statically, itself included, and the module names they import statically. */
async function staticGraph(): Promise<{ files: string[]; imports: Set<string> }> {
  const folder = path.join(ROOT, 'dist', 'server');
  const files: string[] = [];
  const imports = new Set<string>();
  const queue = ['main.js'];
  while (queue.length > 0) {
    const name = queue.shift()!;
    if (files.includes(name)) continue;
    files.push(name);
    const text = await readFile(path.join(folder, name), 'utf8');
    for (const match of text.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s+["']([^"']+)["']|^\s*import\s+["']([^"']+)["']/gm)) {
      const target = match[1] ?? match[2] ?? '';
      if (target.startsWith('./')) queue.push(path.posix.normalize(path.posix.join(path.posix.dirname(name), target)));
      else imports.add(target);
    }
  }
  return { files, imports };
}

describe('the bundled server (npm start)', () => {
  it('is ASCII JavaScript that imports no TypeScript and leaves no half-written file', async () => {
    const files = (await readdir(path.join(ROOT, 'dist', 'server'), { recursive: true })).filter((name) => name.endsWith('.js'));
    expect(files).toContain('main.js');
    for (const name of files) {
      const text = await readFile(path.join(ROOT, 'dist', 'server', name), 'utf8');
      expect(text, name).not.toMatch(/from ["'][^"']+\.ts["']|import\(["'][^"']+\.ts["']\)/);
      // ASCII only, so that V8 holds its source one byte per character (build.ts: `asciiOnly`; the
      // comments esbuild keeps hold an ellipsis and a minus sign).
      expect(text, name).not.toMatch(/[^\x00-\x7f]/);
    }
    const leftovers = (await readdir(path.join(ROOT, 'dist', 'server'), { recursive: true })).filter((name) => name.endsWith('.tmp'));
    expect(leftovers).toEqual([]);
  });

  it('imports no optional back end and no node:http namespace at start', async () => {
    const { files, imports } = await staticGraph();
    expect(files.length).toBeGreaterThan(1);
    expect([...imports].filter((name) => LATE.includes(name) || name.startsWith('@aws-sdk/'))).toEqual([]);
    // An ES import of node:http reads http.WebSocket, which loads Node's fetch (build.ts).
    expect([...imports].filter((name) => name === 'node:http' || name === 'http')).toEqual([]);
    // What it does load, so that the check above reads a real graph.
    expect(imports).toContain('knex');
    expect(imports).toContain('zod');
  });

  it('npm start stops when npm is sent SIGTERM, leaving no server behind', { timeout: LONG }, async () => {
    const folder = await tempDir();
    try {
      const npm = spawn('npm', ['start', '--silent'], { cwd: ROOT, env: await childEnv({ DATA_DIR: folder, PORT: '0', LOG_LEVEL: 'warn' }), stdio: ['ignore', 'pipe', 'pipe'] });
      const { url: started } = await listening(npm, 'npm start');
      expect((await fetch(`${started}/health`)).status).toBe(200);
      const exited = new Promise((resolve) => npm.once('exit', resolve));
      npm.kill('SIGTERM');
      await exited;
      // The server itself stopped, not only npm: its port no longer answers.
      await expect.poll(async () => fetch(`${started}/health`).then(() => 'answers', () => 'closed'), { timeout: 15_000 }).toBe('closed');
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('serves the pages with their stylesheet', async () => {
    const page = await fetch(`${url}/account/login`);
    expect(page.status).toBe(200);
    const html = await page.text();
    const css = /href="(\/assets\/pages\.[0-9a-f]{16}\.css)"/.exec(html)?.[1];
    expect(css).toBeDefined();
    const sheet = await fetch(`${url}${css}`);
    expect(sheet.status).toBe(200);
    expect(sheet.headers.get('content-type')).toMatch(/^text\/css/);
  });

  it('builds the API document at its first request, the same as the sources build', async () => {
    const res = await fetch(`${url}/openapi.json`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(buildOpenApiDocument(loadConfig(env)));
    const viewerCss = await fetch(`${url}/docs/swagger-ui.css`);
    expect(viewerCss.status).toBe(200);
    expect(await viewerCss.text()).toContain('.swagger-ui');
  });

  it('answers tRPC and the REST path of the same procedure', async () => {
    const input = encodeURIComponent(JSON.stringify({ fullname: 'Ada Lovelace' }));
    const trpc = await fetch(`${url}/trpc/accounts.tildeUsername?input=${input}`);
    expect(trpc.status).toBe(200);
    const rest = await new Client(url).get('/tildeusername?fullname=Ada%20Lovelace');
    expect(rest.status).toBe(200);
    expect(((await trpc.json()) as { result: { data: unknown } }).result.data).toEqual(rest.body);
  });

  it('checks a new password against the common-password list, loaded at the first check', async () => {
    const res = await new Client(url).post('/register', { email: 'bundle@example.org', fullname: 'Ada Lovelace', password: 'password123', token: 'dev-ok' });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toMatch(/common or breached/);
  });
});
