/**
 * Rows 6, 7, 8 and 11: a 50 MB PDF uploaded in 5 MB chunks, the server's memory while ten such
 * uploads run at once, and the PDF read back, against bare servers that only move the bytes;
 * the same uploads against the peer, `@tus/server`.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { venueConfig } from '../../helpers/venue.ts';
import type { Row } from '../report.ts';
import { downloadRate, MB, pdfBytes, sampleResident, split, uploadChunks, uploadTus, type Upload } from '../transfer.ts';
import { median, ratioRow, restingBytes, withBaseline, type BenchContext } from './common.ts';

const VENUE = 'Bench.org/2027';
const SUBMISSION = `${VENUE}/-/Submission`;
const FILE_BYTES = 50 * MB;
const CHUNK_BYTES = 5 * MB;

/** Rows 6 and 11's uploads: MB/s of each measured round, and resident bytes (at rest, at peak). */
interface Sequential {
  ours: number[];
  bare: number[];
  tus: number[];
  oursPeak: number;
  tusPeak: number;
  oursRest: number;
  tusRest: number;
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

/** Writes what earlier rows left in the page cache out to disk, so its writeback does not weigh on the next measurement. */
function settleDisk(): void {
  execFileSync('sync');
}

export class FileRows {
  readonly #ctx: BenchContext;
  #venue: Promise<void> | null = null;
  /** A 50 MB PDF uploaded by the author, and the note that holds it once row 8 needs one. */
  #pdf: { url: string; noteId?: string } | null = null;
  #uploads = 0;
  #sequentialRuns: Promise<Sequential> | null = null;

  constructor(ctx: BenchContext) {
    this.#ctx = ctx;
  }

  /** The venue whose submission form has the `pdf` field (50 MB at most) every upload is for. */
  #ensureVenue(): Promise<void> {
    this.#venue ??= (async () => {
      const res = await fetch(`${this.#ctx.server.url}/venues`, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.#ctx.seeded.adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(venueConfig(VENUE)),
      });
      if (res.status !== 200) throw new Error(`POST /venues: ${res.status} ${await res.text()}`);
    })();
    return this.#venue;
  }

  /** A chunked upload to the service as the author: an upload id of its own, chunks counted from 0. */
  #toService(): Upload {
    const clientUploadId = `bench-${(this.#uploads += 1)}`;
    return {
      url: `${this.#ctx.server.url}/attachment/chunk`,
      headers: { authorization: `Bearer ${this.#ctx.seeded.authorToken}` },
      fields: (index, total) => ({ name: 'pdf', invitationId: SUBMISSION, clientUploadId, chunkIndex: index, totalChunks: total }),
    };
  }

  /** `shared`'s chunks with a first chunk of its own, marked with `n`: every upload is a new file. */
  static #unique(shared: Buffer[], n: number): Buffer[] {
    const first = Buffer.from(shared[0] ?? Buffer.alloc(0));
    first.write(`bench upload ${n} ${Date.now()}`, 16);
    return [first, ...shared.slice(1)];
  }

  /**
   * Rows 6 and 11 share one measurement: the same 50 MB in 5 MB chunks, one chunk after the
   * other, to the service, to the bare busboy server (row 6) and to the tus peer (row 11), in
   * turns; one warm-up each, then three rounds. While the service and the peer take theirs,
   * their resident memory (`/proc/<pid>/status`, as row 7 reads it) is sampled for its peak.
   */
  #sequential(): Promise<Sequential> {
    this.#sequentialRuns ??= (async () => {
      await this.#ensureVenue();
      const shared = split(pdfBytes(FILE_BYTES), CHUNK_BYTES);
      settleDisk();
      const result: Sequential = { ours: [], bare: [], tus: [], oursPeak: 0, tusPeak: 0, oursRest: 0, tusRest: 0 };
      await withBaseline('busboy', [this.#ctx.scratchDir], async (busboyUrl) =>
        withBaseline('tus', [path.join(this.#ctx.scratchDir, 'tus')], async (tusUrl, tus) => {
          const toBare: Upload = { url: `${busboyUrl}/upload`, headers: {}, fields: (index, total) => ({ name: 'pdf', chunkIndex: index, totalChunks: total }) };
          result.oursRest = await restingBytes(this.#ctx.server.pid);
          result.tusRest = await restingBytes(tus.pid);
          for (let i = 0; i < 4; i += 1) {
            const theirs = await uploadChunks(toBare, FileRows.#unique(shared, i));
            const oursSampler = sampleResident(this.#ctx.server.pid);
            const mine = await uploadChunks(this.#toService(), FileRows.#unique(shared, i));
            const oursPeak = await oursSampler.stop();
            const tusSampler = sampleResident(tus.pid);
            const peer = await uploadTus(`${tusUrl}/files`, FileRows.#unique(shared, i));
            const tusPeak = await tusSampler.stop();
            const stored = (mine.last as { url?: string }).url;
            if (!stored) throw new Error(`the last chunk answered ${JSON.stringify(mine.last)}`);
            this.#pdf ??= { url: stored };
            if (i === 0) continue;
            result.bare.push(FILE_BYTES / MB / theirs.seconds);
            result.ours.push(FILE_BYTES / MB / mine.seconds);
            result.tus.push(FILE_BYTES / MB / peer.seconds);
            result.oursPeak = Math.max(result.oursPeak, oursPeak);
            result.tusPeak = Math.max(result.tusPeak, tusPeak);
          }
        }),
      );
      settleDisk();
      return result;
    })();
    return this.#sequentialRuns;
  }

  /** Row 6: the service against the bare busboy server: the median of three each. */
  async row6(): Promise<Row[]> {
    const { ours, bare } = await this.#sequential();
    return [
      ratioRow({
        id: '6',
        what: 'a 50 MB PDF uploaded in 5 MB chunks',
        figure: median(ours),
        figureDetail: 'median of 3',
        baseline: median(bare),
        baselineDetail: 'bare busboy to disk',
        unit: 'MB/s',
        least: 0.7,
      }),
    ];
  }

  /**
   * Row 11: the issue's peer, `@tus/server` 2 with its file store: row 6's uploads against the
   * same bytes sent with the tus protocol, and the peak resident memory of each server process
   * while it took them.
   */
  async row11(): Promise<Row[]> {
    const { ours, tus, oursPeak, tusPeak, oursRest, tusRest } = await this.#sequential();
    const growth = (peak: number, rest: number) => `peak; at rest ${Math.round(rest / MB)} MB, ${peak >= rest ? '+' : '−'}${Math.abs(Math.round((peak - rest) / MB))} MB`;
    const ratio = oursPeak / tusPeak;
    return [
      ratioRow({
        id: '11a',
        what: 'a 50 MB file in 5 MB chunks, one after the other (row 6)',
        figure: median(ours),
        figureDetail: 'median of 3',
        baseline: median(tus),
        baselineDetail: '`@tus/server` + `@tus/file-store`, median of 3',
        unit: 'MB/s',
        least: 1.0,
      }),
      {
        id: '11b',
        what: 'server resident memory during those uploads',
        figure: oursPeak / MB,
        figureDetail: growth(oursPeak, oursRest),
        baseline: tusPeak / MB,
        baselineDetail: `\`@tus/server\`, ${growth(tusPeak, tusRest)}`,
        unit: 'MB',
        ratio,
        target: '≤ 1.0',
        met: ratio <= 1.0,
      },
    ];
  }

  /** Row 7: the server's resident memory at rest, then its peak while ten 50 MB chunked uploads run at once. */
  async row7(): Promise<Row[]> {
    await this.#ensureVenue();
    const pid = this.#ctx.server.pid;
    const shared = split(pdfBytes(FILE_BYTES), CHUNK_BYTES);
    const uploads = Array.from({ length: 10 }, (_, i) => FileRows.#unique(shared, 100 + i));
    settleDisk();
    const rest = await restingBytes(pid);
    const sampler = sampleResident(pid);
    await Promise.all(uploads.map((chunks) => uploadChunks(this.#toService(), chunks)));
    const peak = await sampler.stop();
    const growth = (peak - rest) / MB;
    return [
      {
        id: '7',
        what: 'server resident memory, ten 50 MB chunked uploads at once',
        figure: peak / MB,
        figureDetail: `peak, +${Math.round(growth)} MB`,
        baseline: rest / MB,
        baselineDetail: 'at rest',
        unit: 'MB',
        ratio: peak / rest,
        target: '< +150 MB',
        met: growth < 150,
      },
    ];
  }

  /** A note of the author's whose `pdf` is a 50 MB PDF uploaded in chunks (row 6's, when it ran). */
  async #pdfNote(): Promise<{ url: string; noteId: string }> {
    await this.#ensureVenue();
    if (!this.#pdf) {
      const upload = await uploadChunks(this.#toService(), FileRows.#unique(split(pdfBytes(FILE_BYTES), CHUNK_BYTES), 0));
      const url = (upload.last as { url?: string }).url;
      if (!url) throw new Error(`the last chunk answered ${JSON.stringify(upload.last)}`);
      this.#pdf = { url };
    }
    if (!this.#pdf.noteId) {
      const content = {
        title: { value: 'Benchmarked paper' },
        authors: { value: ['Bench Author'] },
        authorids: { value: [this.#ctx.seeded.authorId] },
        abstract: { value: 'Fifty megabytes.' },
        pdf: { value: this.#pdf.url },
      };
      const res = await fetch(`${this.#ctx.server.url}/notes`, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.#ctx.seeded.authorToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ invitation: SUBMISSION, content }),
      });
      const body = (await res.json()) as { id?: string };
      if (res.status !== 200 || !body.id) throw new Error(`POST /notes: ${res.status} ${JSON.stringify(body)}`);
      this.#pdf.noteId = body.id;
    }
    return { url: this.#pdf.url, noteId: this.#pdf.noteId };
  }

  /**
   * Row 8: the note's PDF through `GET /pdf?id=`, against the same file piped by a bare server;
   * four downloads at a time, in turns (two rounds of 2.5 s each).
   */
  async row8(): Promise<Row[]> {
    const { url, noteId } = await this.#pdfNote();
    const file = path.join(this.#ctx.dataDir, 'files', 'pdf', path.basename(url));
    const connections = 4;
    settleDisk();
    const ours = () =>
      downloadRate(`${this.#ctx.server.url}/pdf?id=${encodeURIComponent(noteId)}`, { authorization: `Bearer ${this.#ctx.seeded.authorToken}` }, FILE_BYTES, connections, 2.5);
    const [figure, baseline] = await withBaseline('files', [file], async (bare) => {
      const figures: number[] = [];
      const baselines: number[] = [];
      for (let i = 0; i < 2; i += 1) {
        figures.push((await ours()).mbPerSecond);
        baselines.push((await downloadRate(`${bare}/paper.pdf`, {}, FILE_BYTES, connections, 2.5)).mbPerSecond);
      }
      return [mean(figures), mean(baselines)];
    });
    return [
      ratioRow({
        id: '8',
        what: '`GET /pdf?id=` of a 50 MB PDF',
        figure,
        figureDetail: `${connections} at a time`,
        baseline,
        baselineDetail: 'bare `createReadStream` pipe',
        unit: 'MB/s',
        least: 0.8,
      }),
    ];
  }
}
