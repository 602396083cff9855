/**
 * Issue 29: tus uploads on an install of three server processes behind one address (a
 * round-robin balancer), sharing one PostgreSQL database and an S3-compatible store (s3rver),
 * each process with a data folder of its own as on machines of their own. tus-js-client sends
 * small chunks, so the PATCHes of one upload land on every process in turn: each must take the
 * offset from the database and append where the last one, elsewhere, stopped.
 *
 * PostgreSQL only: processes on machines of their own need a database server (on SQLite the
 * processes of an install share one machine's file, which `test/scale/several-processes.test.ts`
 * covers for uploads in chunks).
 */
import { execFile } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropTestDatabase, TEST_POSTGRES_URL, testDatabaseEnv } from '../helpers/database.ts';
import { Client } from '../helpers/http.ts';
import { startServerProcess, stopAll, type ServerProcess } from '../helpers/processes.ts';
import { startRoundRobin, type RoundRobin } from '../helpers/round-robin.ts';
import { childEnv, tempDir } from '../helpers/server.ts';
import { PASSWORD } from '../helpers/users.ts';
import { venueConfig } from '../helpers/venue.ts';
import { waitUntil } from '../helpers/wait.ts';
import { pdfBytes, sha1, SUBMISSION, VENUE } from './helpers.ts';
import { startS3rver, type TestBucket } from './s3rver.ts';
import { metadataFor, RecordingHttpStack, runUpload } from './tus-helpers.ts';

/** Three processes started, and a CLI run per person: slower than one server on a loaded machine. */
const LONG = { timeout: 60_000 };
const SERVERS = 3;
const PREFIX = 'tus/';
const run = promisify(execFile);

describe.skipIf(!TEST_POSTGRES_URL)('tus uploads on three processes sharing PostgreSQL and an S3 store (skipped without DATABASE_URL)', () => {
  let dir: string;
  let proxy: RoundRobin;
  let bucket: TestBucket;
  let servers: ServerProcess[];
  let env: NodeJS.ProcessEnv;
  let token: string;

  /** A signed-in person made with `npm run admin -- user add`, as an operator would. */
  async function person(email: string, fullname: string, role?: 'superuser'): Promise<Client> {
    await run(process.execPath, ['server/cli/admin.ts', 'user', 'add', '--email', email, '--password', PASSWORD, '--fullname', fullname, ...(role ? ['--role', role] : [])], { env });
    const client = new Client(proxy.url);
    const login = await client.post('/login', { id: email, password: PASSWORD });
    expect(login.status).toBe(200);
    client.bearer = login.body.token;
    return client;
  }

  beforeAll(async () => {
    dir = await tempDir();
    proxy = await startRoundRobin();
    bucket = await startS3rver();
    env = await childEnv({
      ...bucket.env(PREFIX),
      DATA_DIR: dir,
      ...(await testDatabaseEnv(dir)),
      BASE_URL: proxy.url,
      TRUST_PROXY: 'loopback',
      UPLOAD_HUMAN_VERIFICATION_AFTER: '0',
    });
    servers = await Promise.all(
      Array.from({ length: SERVERS }, async (_, i) => {
        const own = path.join(dir, `machine-${i}`);
        await mkdir(own, { recursive: true });
        return startServerProcess({ ...env, DATA_DIR: own });
      }),
    );
    proxy.targets = servers.map((s) => s.url);
    const [root, author] = await Promise.all([person('root@example.org', 'Root Admin', 'superuser'), person('mary@example.org', 'Mary Somerville')]);
    expect((await root.post('/venues', venueConfig(VENUE))).status).toBe(200);
    token = author.bearer ?? '';
  }, 90_000);

  afterAll(async () => {
    await stopAll();
    await proxy?.close();
    await bucket?.close();
    if (dir) {
      await rm(dir, { recursive: true, force: true });
      await dropTestDatabase(dir);
    }
  });

  const options = (extra: Record<string, unknown>) => ({
    endpoint: `${proxy.url}/attachment/tus`,
    headers: { Authorization: `Bearer ${token}` },
    metadata: metadataFor(SUBMISSION, 'pdf', 'paper.pdf'),
    retryDelays: null,
    httpStack: new RecordingHttpStack(),
    ...extra,
  });

  /** The bucket's keys under the service's prefix, without it. */
  async function keys(under: string): Promise<string[]> {
    const listed = await bucket.client.send(new ListObjectsV2Command({ Bucket: bucket.bucket, Prefix: `${PREFIX}${under}` }));
    return (listed.Contents ?? []).map((o) => (o.Key ?? '').slice(PREFIX.length)).sort();
  }

  /** The file read back from every process directly: each gives the same bytes. */
  async function expectEverywhere(url: string, data: Buffer): Promise<void> {
    for (const server of servers) {
      const res = await fetch(server.url + url, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(data)).toBe(true);
    }
  }

  it('the PATCHes of one upload, each on the next process, make the file', LONG, async () => {
    const data = pdfBytes(1_500_003);
    const servedBefore = [...proxy.served];
    const opts = options({ chunkSize: 256 * 1024 });
    const outcome = await runUpload(data, opts);
    expect(outcome.ok, outcome.ok ? '' : String(outcome.error)).toBe(true);
    const statuses = opts.httpStack.exchanges.map((e) => `${e.method} ${e.status}`);
    expect(statuses).toEqual(['POST 201', ...Array(6).fill('PATCH 204')]);
    // Round robin: seven requests in turn, so every process took at least two of them.
    expect(servers.map((_, i) => (proxy.served[i] ?? 0) - (servedBefore[i] ?? 0)).every((n) => n >= 2)).toBe(true);
    const url = `/pdf/${sha1(data)}.pdf`;
    expect(outcome.ok && outcome.lastResponse.getHeader('Attachment-Url')).toBe(url);
    await expectEverywhere(url, data);
    expect(await keys('files/')).toContain(`files${url}`);
    await waitUntil(async () => (await keys('')).every((k) => k.startsWith('files/')), 'the upload\'s parts removed from the bucket');
  });

  it('parallel parts spread over the processes concatenate to the same file', LONG, async () => {
    const data = pdfBytes(1_000_001);
    const opts = options({ parallelUploads: 3, chunkSize: 128 * 1024, metadataForPartialUploads: metadataFor(SUBMISSION, 'pdf', 'paper.pdf') });
    const outcome = await runUpload(data, opts);
    expect(outcome.ok, outcome.ok ? '' : String(outcome.error)).toBe(true);
    if (!outcome.ok) return;
    expect(opts.httpStack.exchanges.filter((e) => e.status >= 300)).toEqual([]);
    const url = `/pdf/${sha1(data)}.pdf`;
    // The final upload's HEAD, asked of each process: complete, with the file's URL.
    for (const server of servers) {
      const head = await fetch(server.url + new URL(outcome.upload.url ?? '').pathname, { method: 'HEAD', headers: { 'Tus-Resumable': '1.0.0', authorization: `Bearer ${token}` } });
      expect(head.status).toBe(200);
      expect(head.headers.get('upload-offset')).toBe(String(data.length));
      expect(head.headers.get('attachment-url')).toBe(url);
    }
    await expectEverywhere(url, data);
    await waitUntil(async () => (await keys('')).every((k) => k.startsWith('files/')), 'the parts removed from the bucket');
  });

  it('parallel parts sent whole, each through another process, are the parts of one S3 multipart upload', LONG, async () => {
    // Parts over S3's smallest part (5 MiB): each is sent as its span's part, whichever process takes it.
    const data = pdfBytes(16 * 1024 * 1024 + 5);
    let chunksBeforeFinal: string[] | undefined;
    const opts = options({
      parallelUploads: 3,
      metadataForPartialUploads: metadataFor(SUBMISSION, 'pdf', 'paper.pdf'),
      onBeforeRequest: async (req: { getHeader(name: string): string | undefined }) => {
        if (req.getHeader('Upload-Concat')?.startsWith('final;')) chunksBeforeFinal = await keys('chunks/');
      },
    });
    const outcome = await runUpload(data, opts);
    expect(outcome.ok, outcome.ok ? '' : String(outcome.error)).toBe(true);
    if (!outcome.ok) return;
    const url = `/pdf/${sha1(data)}.pdf`;
    expect(outcome.lastResponse.getHeader('Attachment-Url')).toBe(url);
    // No part was a chunk object: each went into the span's multipart upload.
    expect(chunksBeforeFinal).toEqual([]);
    await expectEverywhere(url, data);
    await waitUntil(async () => (await keys('')).every((k) => k.startsWith('files/')), 'the span and the parts removed from the bucket');
  });
});
