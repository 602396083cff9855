/**
 * `npm run bench [-- --out results.json] [--only 1,4,9] [--cpu-prof <folder>]`
 *
 * Seeds a temporary data folder, starts the real server on it (`node server/main.ts`, its own
 * process), measures the nine rows against baselines measured in the same run (each in
 * a process of its own), prints one Markdown table and, with `--out`, writes it as JSON. The
 * folder and every process are removed at the end, on failure and on Ctrl-C too.
 *
 * `--cpu-prof <folder>` writes the server's V8 CPU profile there when it stops (open it in
 * Chrome's DevTools, Performance tab, or speedscope); `--only` measures some rows.
 */
import { cpSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { cleanUpOnExit, cleanup, freePort, startListening, tempDir } from './processes.ts';
import { machine, markdown, writeJson, type Row } from './report.ts';
import { FileRows } from './rows/files.ts';
import { RequestRows } from './rows/requests.ts';
import { SignInRows } from './rows/sign-in.ts';
import { seed } from './setup.ts';

const { values } = parseArgs({
  options: {
    out: { type: 'string' },
    only: { type: 'string' },
    'cpu-prof': { type: 'string' },
  },
});

/** Rows that write many files come last, so the disk's writeback does not weigh on the others. */
const ORDER = ['1', '2', '3', '4', '5', '9', '8', '6', '7'] as const;
const selected = new Set(values.only ? values.only.split(',').map((s) => s.trim()) : ORDER);

cleanUpOnExit();
const started = performance.now();
const host = machine();
try {
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
  let servers = 0;
  /** `node server/main.ts` on a data folder, as `npm start` runs it. */
  const startServer = async (folder: string, listenOn?: number) => {
    const serverPort = listenOn ?? (await freePort());
    servers += 1;
    return startListening('server', 'server/main.ts', {
      env: {
        PORT: String(serverPort),
        HOST: '127.0.0.1',
        BASE_URL: `http://127.0.0.1:${serverPort}`,
        DATA_DIR: folder,
        LOG_LEVEL: 'info',
        UPLOAD_HUMAN_VERIFICATION_AFTER: '0',
      },
      nodeFlags: profileDir && servers === 1 ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
    });
  };
  const server = await startServer(dataDir, port);
  process.stderr.write(`bench: server ${server.url} (pid ${server.pid})\n`);

  const ctx = { server, dataDir, largeDataDir, startServer: (folder: string) => startServer(folder), scratchDir, seeded };
  const requests = new RequestRows(ctx);
  const signIns = new SignInRows(ctx);
  const files = new FileRows(ctx);
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

  const rows = [...measured.entries()].sort(([a], [b]) => Number(a) - Number(b)).flatMap(([, r]) => r);
  const notes = [
    'The server is `node server/main.ts` in its own process on a fresh data folder, with its defaults (log level `info`, one JSON line per request, to a file) except `UPLOAD_HUMAN_VERIFICATION_AFTER=0`, so uploads never ask for a human-verification token.',
    'Rate limits: no setting exists for the login limits, so the bench stays under them: row 5 logs in with four accounts, one connection each, and a right password gives its try back. Refresh, userinfo, authorize and token have no limit.',
    'Load comes from the bench process (autocannon for request rates, `node:http` for 50 MB bodies); every baseline runs in a process of its own. A figure and its baseline are measured in turns (3 rounds of 2 s each after a 2 s warm-up; row 4: 2 rounds of 3 s; row 5: 3 rounds of 4 s, logins in a closed loop counted as the baseline counts hashes; row 8: 2 rounds of 2.5 s), so other work on the machine weighs on both; request rates at 32 connections (row 4: 16, row 5: 4).',
    'The database holds 100 profiles; row 9 runs a second server on a copy of it with 99 900 more (made-up names, so most have one or two holders; the name asked about has three in both).',
  ];
  const seconds = (performance.now() - started) / 1000;
  console.log(markdown(host, rows, notes, seconds));
  if (values.out) await writeJson(path.resolve(values.out), host, rows, notes, seconds);
  if (profileDir) process.stderr.write(`bench: the server's CPU profile is in ${profileDir}\n`);
} finally {
  await cleanup();
}
