/**
 * Row 13: the server's resident memory at rest after start, as an operator's `npm start` leaves
 * it: a new process on an empty data folder, five seconds after it listens, nothing asked of it.
 * Beside it, the tus peer's process started the same way, and a bare Node HTTP server (an ES
 * module importing `node:http` and listening: the floor any Node server starts from).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startListening, type Started } from '../processes.ts';
import type { Row } from '../report.ts';
import { restingBytes, withBaseline, type BenchContext } from './common.ts';

const MB = 1024 * 1024;
/** How long after listening a process is left alone before it is read. */
const SETTLE_MS = 5_000;
/** The goal the issue sets. */
const MOST_MB = 100;

/** A started process's resident memory once it has been left alone `SETTLE_MS`; the process is stopped after. */
async function settled(started: Started): Promise<number> {
  try {
    await sleep(SETTLE_MS);
    return await restingBytes(started.pid);
  } finally {
    await started.stop();
  }
}

export async function row13(ctx: BenchContext): Promise<Row[]> {
  const folder = path.join(ctx.scratchDir, 'fresh-data');
  mkdirSync(folder, { recursive: true });
  const oursRest = await settled(await ctx.startServer(folder));
  const peerRest = await withBaseline('tus', [path.join(ctx.scratchDir, 'tus-at-rest')], async (_url, peer) => {
    await sleep(SETTLE_MS);
    return restingBytes(peer.pid);
  });
  const bareScript = path.join(ctx.scratchDir, 'bare-http.mjs');
  writeFileSync(bareScript, "import { createServer } from 'node:http';\nconst server = createServer((_req, res) => res.end('ok'));\nserver.listen(0, '127.0.0.1', () => console.log(`Listening on http://127.0.0.1:${server.address().port}`));\nprocess.once('SIGTERM', () => server.close(() => process.exit(0)));\n");
  const bareRest = await settled(await startListening('bare-http', bareScript));
  const figure = oursRest / MB;
  return [
    {
      id: '13',
      what: 'server resident memory at rest, 5 s after `npm start` on an empty data folder',
      figure,
      figureDetail: `a bare Node HTTP server: ${Math.round(bareRest / MB)} MB`,
      baseline: peerRest / MB,
      baselineDetail: '`@tus/server` + `@tus/file-store`, started the same way',
      unit: 'MB',
      ratio: oursRest / peerRest,
      target: `≤ ${MOST_MB} MB`,
      met: figure <= MOST_MB,
    },
  ];
}
