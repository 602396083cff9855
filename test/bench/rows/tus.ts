/**
 * Row 12 (issue 29): a 50 MB PDF sent by tus-js-client, unmodified and with its defaults, to our
 * `/attachment/tus` and to the peer, `@tus/server` 2 with `@tus/file-store`; and the peak
 * resident memory of each server process while it takes them.
 *
 * Both get the same client, options and metadata. The chunk size is tus-js-client's (and
 * Uppy's) default, `Infinity`: one `POST` that creates the upload, then the whole file in one
 * `PATCH`. That is what a tus user gets without tuning, so it is what the comparison should
 * show; it also measures each server's streaming path rather than its per-request cost, which
 * row 11 (5 MB chunks) already weighs.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { Upload } from 'tus-js-client';
import { venueConfig } from '../../helpers/venue.ts';
import type { Row } from '../report.ts';
import { MB, pdfBytes, sampleResident } from '../transfer.ts';
import { median, ratioRow, restingBytes, withBaseline, type BenchContext } from './common.ts';

/** A venue of this row's own, so that it runs alone (`--only 12`) or after rows 6 and 11 alike. */
const VENUE = 'TusBench.org/2027';
const SUBMISSION = `${VENUE}/-/Submission`;
const FILE_BYTES = 50 * MB;
const ROUNDS = 3;

/** What a tus upload took, and the stored file's URL (ours answers it; the peer has none). */
interface Sent {
  seconds: number;
  attachmentUrl: string | undefined;
}

/**
 * `data` through tus-js-client to `endpoint`, timed from `start()` to its success. No retries:
 * a refused or failed request must fail the bench, not be measured as a slow upload.
 */
function throughTusJsClient(endpoint: string, data: Buffer, headers: Record<string, string>): Promise<Sent> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const upload = new Upload(data, {
      endpoint,
      headers,
      metadata: { invitation: SUBMISSION, name: 'pdf', filename: 'paper.pdf', filetype: 'application/pdf' },
      chunkSize: Number.POSITIVE_INFINITY,
      retryDelays: null,
      storeFingerprintForResuming: false,
      onSuccess: ({ lastResponse }) => {
        const url: unknown = lastResponse.getHeader('Attachment-Url');
        resolve({ seconds: (performance.now() - started) / 1000, attachmentUrl: typeof url === 'string' ? url : undefined });
      },
      onError: reject,
    });
    upload.start();
  });
}


export class TusRows {
  readonly #ctx: BenchContext;

  constructor(ctx: BenchContext) {
    this.#ctx = ctx;
  }

  async #createVenue(): Promise<void> {
    const res = await fetch(`${this.#ctx.server.url}/venues`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.#ctx.seeded.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(venueConfig(VENUE)),
    });
    if (res.status !== 200) throw new Error(`POST /venues: ${res.status} ${await res.text()}`);
  }

  /**
   * Row 12: a warm-up, then three rounds, each an upload to us and one to the peer; every
   * upload is a new file (its first bytes changed), since ours stores equal bytes once.
   */
  async row12(): Promise<Row[]> {
    await this.#createVenue();
    const data = pdfBytes(FILE_BYTES);
    // What earlier rows left in the page cache goes to disk first, and this row's uploads after
    // it, so that no row's writeback weighs on another's measurement.
    execFileSync('sync');
    const auth = { authorization: `Bearer ${this.#ctx.seeded.authorToken}` };
    const ours: number[] = [];
    const peer: number[] = [];
    let oursPeak = 0;
    let peerPeak = 0;
    const { oursRest, peerRest } = await withBaseline('tus', [path.join(this.#ctx.scratchDir, 'tus-js-client')], async (peerUrl, peerProcess) => {
      const rests = { oursRest: await restingBytes(this.#ctx.server.pid), peerRest: await restingBytes(peerProcess.pid) };
      for (let round = 0; round <= ROUNDS; round += 1) {
        data.write(`bench tus-js-client ${round} ${Date.now()}`, 16);
        const oursSampler = sampleResident(this.#ctx.server.pid);
        const mine = await throughTusJsClient(`${this.#ctx.server.url}/attachment/tus`, data, auth);
        const mineAt = await oursSampler.stop();
        if (!mine.attachmentUrl?.startsWith('/pdf/')) throw new Error(`our last PATCH answered no Attachment-Url: ${String(mine.attachmentUrl)}`);
        const peerSampler = sampleResident(peerProcess.pid);
        const theirs = await throughTusJsClient(`${peerUrl}/files`, data, auth);
        const theirsAt = await peerSampler.stop();
        if (round === 0) continue;
        ours.push(FILE_BYTES / MB / mine.seconds);
        peer.push(FILE_BYTES / MB / theirs.seconds);
        oursPeak = Math.max(oursPeak, mineAt);
        peerPeak = Math.max(peerPeak, theirsAt);
      }
      return rests;
    });
    execFileSync('sync');
    const growth = (peak: number, rest: number) => `peak; at rest ${Math.round(rest / MB)} MB, ${peak >= rest ? '+' : '−'}${Math.abs(Math.round((peak - rest) / MB))} MB`;
    const ratio = oursPeak / peerPeak;
    return [
      ratioRow({
        id: '12a',
        what: '50 MB through tus-js-client (its defaults: one `PATCH`)',
        figure: median(ours),
        figureDetail: `\`/attachment/tus\`, median of ${ROUNDS}`,
        baseline: median(peer),
        baselineDetail: `\`@tus/server\` + \`@tus/file-store\`, median of ${ROUNDS}`,
        unit: 'MB/s',
        least: 1.0,
      }),
      {
        id: '12b',
        what: 'server resident memory during those uploads',
        figure: oursPeak / MB,
        figureDetail: growth(oursPeak, oursRest),
        baseline: peerPeak / MB,
        baselineDetail: `\`@tus/server\`, ${growth(peerPeak, peerRest)}`,
        unit: 'MB',
        ratio,
        target: '≤ 1.0',
        met: ratio <= 1.0,
      },
    ];
  }
}
