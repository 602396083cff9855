/**
 * `npm run bench [-- --out results.json] [--only 1,4,9] [--cpu-prof <folder>]`
 *
 * Seeds a temporary data folder, starts the real server on it (as `npm start` runs it: the bundle of `server/main.ts`, its own
 * process), measures the issue's nine rows against baselines, and rows 10 to 12 against the
 * peers (node-oidc-provider, `@tus/server`), all measured in the same run (each in a process of
 * its own), prints one Markdown table and, with `--out`, writes it as JSON. The
 * folder and every process are removed at the end, on failure and on Ctrl-C too.
 *
 * `--cpu-prof <folder>` writes the server's V8 CPU profile there when it stops (open it in
 * Chrome's DevTools, Performance tab, or speedscope); `--only` measures some rows.
 *
 * `--processes N` runs N server processes behind a round-robin balancer (its own process) and
 * loads the balancer, as an install of several processes is run. With `DATABASE_URL` set (a
 * PostgreSQL server; its `postgres` database will do), the run makes a database of its own
 * there, runs every server and baseline on it, and drops it at the end. Row 9 needs SQLite.
 */
import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { cleanUpOnExit, cleanup, freePort, ROOT, startListening, tempDir } from './processes.ts';
import { machine, markdown, writeJson, type Row } from './report.ts';
import { FileRows } from './rows/files.ts';
import { RequestRows } from './rows/requests.ts';
import { SignInRows } from './rows/sign-in.ts';
import { row13 } from './rows/memory.ts';
import { TusRows } from './rows/tus.ts';
import { benchDatabaseEnv, seed } from './setup.ts';
import { startCommand } from '../helpers/start-command.ts';

const { values } = parseArgs({
  options: {
    out: { type: 'string' },
    only: { type: 'string' },
    'cpu-prof': { type: 'string' },
    processes: { type: 'string', default: '1' },
  },
});
const processes = Number(values.processes);
if (!Number.isInteger(processes) || processes < 1) throw new Error('--processes takes a whole number, 1 or more');

/**
 * Row 13 (a server of its own on an empty folder, read before any row loads the bench's server) comes first, then rows 6,
 * 11 and 12: rows 11 and 12 compare the server's memory with the peer's, whose
 * process is fresh, so ours is measured fresh too (after the seeding), not after the other rows
 * have grown its heaps; their uploads are synced to disk before the next row, so the writeback does
 * not weigh on it. Rows 8 and 7, which write and read many files, come last. Row 11 reuses row
 * 6's uploads (measured once, with both baselines, for whichever asks first).
 */
const ORDER = ['13', '6', '11', '12', '1', '2', '3', '4', '5', '10', '9', '8', '7'] as const;
const selected = new Set(values.only ? values.only.split(',').map((s) => s.trim()) : ORDER);

cleanUpOnExit();
const started = performance.now();
const host = machine();
let dropDatabase: (() => Promise<void>) | undefined;
try {
  if (process.env.DATABASE_URL) {
    if (selected.has('9')) throw new Error('row 9 copies the SQLite file: leave it out (--only) on PostgreSQL');
    ({ drop: dropDatabase } = await useOwnDatabase(process.env.DATABASE_URL));
  }
  const dataDir = path.join(tempDir(), 'data');
  const scratchDir = path.join(tempDir(), 'scratch');
  mkdirSync(scratchDir, { recursive: true });
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  process.stderr.write(`bench: seeding ${dataDir}\n`);
  const seeded = await seed(dataDir, baseUrl);
  const largeDataDir = path.join(tempDir(), 'data-100k');
  cpSync(dataDir, largeDataDir, { recursive: true });

  const profileDir = values['cpu-prof'] ? path.resolve(values['cpu-prof']) : undefined;
  // The server runs as `npm start` runs it: the bundle built from the sources as they are now,
  // with the start script's Node flags.
  const start = startCommand();
  execFileSync(process.execPath, ['server/build.ts'], { cwd: ROOT, stdio: 'inherit' });
  let servers = 0;
  /** The server on a data folder, as `npm start` runs it (the bundle, the start script's flags). */
  const startServer = async (folder: string, listenOn?: number, publicUrl?: string) => {
    const serverPort = listenOn ?? (await freePort());
    servers += 1;
    return startListening('server', start.script, {
      env: {
        PORT: String(serverPort),
        HOST: '127.0.0.1',
        BASE_URL: publicUrl ?? `http://127.0.0.1:${serverPort}`,
        ...benchDatabaseEnv(),
        DATA_DIR: folder,
        LOG_LEVEL: 'info',
        UPLOAD_HUMAN_VERIFICATION_AFTER: '0',
        ...start.env,
      },
      nodeFlags: [...start.flags, ...(process.env.BENCH_SERVER_FLAGS ?? '').split(' ').filter(Boolean), ...(profileDir && servers === 1 ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])],
    });
  };
  // One process: the server on the bench's port. Several: they all name the balancer's address
  // as theirs, and the balancer listens on the bench's port.
  const behind = processes > 1 ? await Promise.all(Array.from({ length: processes }, () => startServer(dataDir, undefined, baseUrl))) : [];
  const server = processes > 1 ? await startListening('balancer', 'test/bench/balancer.ts', { args: [String(port), ...behind.map((s) => s.url)] }) : await startServer(dataDir, port);
  process.stderr.write(`bench: ${processes > 1 ? `${processes} servers behind ${server.url}` : `server ${server.url} (pid ${server.pid})`}\n`);

  const ctx = { server, dataDir, largeDataDir, startServer: (folder: string) => startServer(folder), scratchDir, seeded };
  const requests = new RequestRows(ctx);
  const signIns = new SignInRows(ctx);
  const files = new FileRows(ctx);
  const tus = new TusRows(ctx);
  const rowsById: Record<(typeof ORDER)[number], () => Promise<Row[]>> = {
    '1': () => requests.row1(),
    '2': () => requests.row2(),
    '3': () => requests.row3(),
    '4': () => signIns.row4(),
    '5': () => signIns.row5(),
    '6': () => files.row6(),
    '7': () => files.row7(),
    '8': () => files.row8(),
    '9': () => requests.row9(),
    '10': () => signIns.row10(),
    '11': () => files.row11(),
    '12': () => tus.row12(),
    '13': () => row13(ctx),
  };
  const measured = new Map<string, Row[]>();
  for (const id of ORDER) {
    if (!selected.has(id)) continue;
    const rowStarted = performance.now();
    process.stderr.write(`bench: row ${id}…`);
    measured.set(id, await rowsById[id]());
    process.stderr.write(` ${Math.round((performance.now() - rowStarted) / 1000)} s\n`);
  }
  await server.stop();
  for (const one of behind) await one.stop();

  const rows = [...measured.entries()].sort(([a], [b]) => Number(a) - Number(b)).flatMap(([, r]) => r);
  const notes = [
    ...(processes > 1 ? [`${processes} server processes behind a round-robin balancer (\`test/bench/balancer.ts\`, a process of its own), on ${process.env.DATABASE_URL ? 'one PostgreSQL database' : 'one SQLite file'}; the figures are the balancer's.`] : process.env.DATABASE_URL ? ['The database is PostgreSQL.'] : []),
    `The server is \`${[...Object.entries(start.env).map(([name, value]) => `${name}=${value}`), 'node', ...start.flags, start.script].join(' ')}\` (\`npm start\`: the bundle of \`server/main.ts\`)` +
      ' in its own process on a fresh data folder, with its defaults (log level `info`, one JSON line per request, to a file) except `UPLOAD_HUMAN_VERIFICATION_AFTER=0`, so uploads never ask for a human-verification token.',
    'Rate limits: no setting exists for the login limits, so the bench stays under them: row 5 logs in with four accounts, one connection each, and a right password gives its try back. Refresh, userinfo, authorize and token have no limit.',
    'Load comes from the bench process (autocannon for request rates, `node:http` for 50 MB bodies); every baseline runs in a process of its own. A figure and its baseline are measured in turns (rows 1, 2 and 9: 4 rounds of 2 s each after a 2 s warm-up, each round swapping which goes first; row 4: 2 rounds of 3 s; row 5: 3 rounds of 4 s, logins in a closed loop counted as the baseline counts hashes; row 8: 2 rounds of 2.5 s), so other work on the machine weighs on both; request rates at 32 connections (row 4: 16, row 5: 4).',
    'Peers (rows 10, 11, 12): node-oidc-provider 9 with its in-memory store and the same client, scopes, claims, PKCE S256 and RS256 ID tokens (`test/bench/baselines/oidc-provider.ts`); its session and consent come from one scripted login and consent walked before the timing. `@tus/server` 2 with `@tus/file-store` in a temporary folder. Row 10: sign-ins on one connection, 2 rounds of 2 s; the GETs at 16 connections, 4 rounds of 1 s; 1 s warm-up each, each round swapping which goes first. Row 11: row 6\'s three uploads in turns with three to the peer; peak resident memory sampled every 20 ms from `/proc/<pid>/status` while each server takes its uploads.',
    'Row 12: tus-js-client 4 in the bench process, unmodified, with its defaults (`chunkSize: Infinity`: a `POST`, then the whole file in one `PATCH`; no retries), the same options and `Upload-Metadata` to both servers; a warm-up, then 3 rounds of one upload to each, each upload a new file; peak resident memory sampled as for row 11 (the peer is a fresh process of its own).',
    'The database holds 100 profiles; row 9 runs a second server on a copy of it with 99 900 more (made-up names, so most have one or two holders; the name asked about has three in both).',
  ];
  const seconds = (performance.now() - started) / 1000;
  console.log(markdown(host, rows, notes, seconds));
  if (values.out) await writeJson(path.resolve(values.out), host, rows, notes, seconds);
  if (profileDir) process.stderr.write(`bench: the server's CPU profile is in ${profileDir}\n`);
} finally {
  await cleanup();
  await dropDatabase?.();
}

/**
 * Makes a database for this run on the PostgreSQL server of `serverUrl` and points this process
 * (and so every server and baseline it starts) at it.
 */
async function useOwnDatabase(serverUrl: string): Promise<{ drop(): Promise<void> }> {
  const name = `bench_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`create database "${name}"`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  process.env.DATABASE_URL = url.toString();
  return {
    async drop() {
      const again = new pg.Client({ connectionString: serverUrl });
      await again.connect();
      await again.query(`drop database if exists "${name}" with (force)`);
      await again.end();
    },
  };
}
