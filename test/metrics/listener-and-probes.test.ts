/**
 * The metrics listener as `npm start` runs it (on `METRICS_PORT` only, closed at shutdown; no
 * metrics at all without it), and the orchestrators' probes: `/health/live` answers while the
 * process does; `/health/ready` only while every migration has run, the database takes a write
 * and the file store (the local folder, or an S3 bucket) is reachable, and says which failed.
 */
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../server/config.ts';
import * as freeSpace from '../../server/free-space.ts';
import { CHECK_KEPT_MS } from '../../server/http/health.ts';
import { startMetricsServer } from '../../server/metrics/server.ts';
import { S3RVER_CREDENTIALS, startS3rver } from '../attachments/s3rver.ts';
import { TEST_POSTGRES_URL } from '../helpers/database.ts';
import { startServerProcess, stopAll } from '../helpers/processes.ts';
import { childEnv, startServer, tempDir, type TestServer } from '../helpers/server.ts';
import { scrape } from './scrape.ts';

/** A process start and its migrations on a loaded 2-core machine. */
const PROCESS = 60_000;

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await stopAll();
  await server?.close();
});

/** A probe after the last one's answer is no longer shared (`CHECK_KEPT_MS`): it sees what changed since. */
const settled = () => new Promise((resolve) => setTimeout(resolve, CHECK_KEPT_MS + 50));
const probe = async (path: string) => {
  if (path !== '/health/live') await settled();
  const res = await fetch(`${server.url}${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};
const NOT_READY = { status: 503, name: 'ServiceUnavailableError' };

describe('the metrics listener', () => {
  it('is off when METRICS_PORT is unset: no metrics are kept and nothing listens', async () => {
    expect(server.config.metricsPort).toBeUndefined();
    expect(server.service.metrics).toBeNull();
    expect(await startMetricsServer(server.service, server.config)).toBeNull();
    expect((await fetch(`${server.url}/metrics`)).status).toBe(404);
  });

  it('is never the public port', () => {
    expect(() => loadConfig({ PORT: '3000', METRICS_PORT: '3000' })).toThrow('METRICS_PORT must differ from PORT');
    expect(loadConfig({ PORT: '3000', METRICS_PORT: '9464' })).toMatchObject({ metricsPort: 9464, metricsHost: '127.0.0.1' });
  });

  it(
    'npm start serves them on METRICS_HOST:METRICS_PORT alone, and stops with the process',
    async () => {
      const dataDir = await tempDir();
      const proc = await startServerProcess(await childEnv({ DATA_DIR: dataDir, METRICS_PORT: '0' }));
      const url = /Metrics on (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(proc.output())?.[1];
      if (!url) throw new Error(`no metrics address in:\n${proc.output()}`);
      expect((await fetch(`${proc.url}/health/live`)).status).toBe(200);
      const metrics = await scrape(url);
      expect(metrics.count('peer_review_http_request_duration_seconds', { route: '/health/live', method: 'GET', status: '200' })).toBe(1);
      expect(metrics.series('peer_review_build_info')).toHaveLength(1);
      expect(metrics.has('nodejs_eventloop_lag_p99_seconds')).toBe(true);
      // The public port has no /metrics, and the metrics port has nothing else.
      expect((await fetch(`${proc.url}/metrics`)).status).toBe(404);
      expect((await fetch(url.replace('/metrics', '/health/live'))).status).toBe(404);
      await stopAll();
      await expect(fetch(url)).rejects.toThrow();
      await rm(dataDir, { recursive: true, force: true });
    },
    PROCESS,
  );
});

describe('the probes', () => {
  it('/health/live answers, /health/ready checks migrations, database and file store', async () => {
    expect(await probe('/health/live')).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await probe('/health/ready')).toEqual({ status: 200, body: { status: 'ok', migrations: 'ok', database: 'ok', files: 'ok' } });
  });

  it('/health/ready is 503 while the file store’s folder is gone, and ready again once it is back', async () => {
    const files = path.join(server.dataDir, 'files');
    await rm(files, { recursive: true, force: true });
    const gone = await probe('/health/ready');
    expect(gone).toEqual({
      status: 503,
      body: { ...NOT_READY, message: 'Not ready: the file store is not reachable', details: { migrations: 'ok', database: 'ok', files: 'unavailable', reqId: expect.any(String) } },
    });
    expect((await probe('/health/live')).status).toBe(200);
    await mkdir(files);
    expect((await probe('/health/ready')).status).toBe(200);
  });

  it('/health/ready is 503 while a migration has not run', async () => {
    const db = server.service.db;
    const last = (await db('knex_migrations').orderBy('id', 'desc').first()) as Record<string, unknown>;
    await db('knex_migrations').where({ id: last.id }).delete();
    try {
      expect((await probe('/health/ready')).body).toMatchObject({ ...NOT_READY, message: 'Not ready: migrations have not all run', details: { migrations: 'pending', database: 'ok', files: 'ok' } });
    } finally {
      await db('knex_migrations').insert(last);
    }
    expect((await probe('/health/ready')).status).toBe(200);
  });

  it('/health/ready is 503 when the file store is a bucket that stopped answering', async () => {
    const bucket = await startS3rver();
    vi.stubEnv('AWS_ACCESS_KEY_ID', S3RVER_CREDENTIALS.accessKeyId);
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', S3RVER_CREDENTIALS.secretAccessKey);
    const s3 = await startServer({ STORAGE_URL: bucket.storageUrl('ready/') });
    try {
      const ready = await fetch(`${s3.url}/health/ready`);
      expect(ready.status).toBe(200);
      await bucket.close();
      await settled();
      const stopped = await fetch(`${s3.url}/health/ready`);
      expect(stopped.status).toBe(503);
      expect(await stopped.json()).toMatchObject({ ...NOT_READY, details: { migrations: 'ok', database: 'ok', files: 'unavailable' } });
    } finally {
      await s3.close();
      vi.unstubAllEnvs();
    }
  });

  it('/health/ready shares one check among the probes of a second, and is 503 when the data folder’s disk has no room', async () => {
    await settled();
    const writes: string[] = [];
    const count = (query: { sql: string }) => {
      if (/rate_limits/.test(query.sql)) writes.push(query.sql);
    };
    server.service.db.on('query', count);
    try {
      const answers = await Promise.all(Array.from({ length: 20 }, () => fetch(`${server.url}/health/ready`)));
      expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
      expect(writes).toHaveLength(1);
    } finally {
      server.service.db.off('query', count);
    }
    // A disk without room: the probes see it, though a rolled-back write still passes.
    const room = vi.spyOn(freeSpace, 'checkRoom').mockRejectedValue(new Error('no room'));
    try {
      // PostgreSQL's disk is not this machine's to ask about; a SQLite file's is the data folder's.
      const database = TEST_POSTGRES_URL ? 'ok' : 'unavailable';
      expect(await probe('/health/ready')).toMatchObject({ status: 503, body: { ...NOT_READY, details: { migrations: 'ok', database, files: 'unavailable' } } });
    } finally {
      room.mockRestore();
    }
  });

  it('/health/ready is 503 while the database is gone; /health/live still answers', async () => {
    const db = server.service.db;
    await db.destroy();
    try {
      expect(await probe('/health/ready')).toEqual({
        status: 503,
        body: {
          ...NOT_READY,
          message: 'Not ready: the migrations cannot be read; the database does not take a write',
          details: { migrations: 'unavailable', database: 'unavailable', files: 'ok', reqId: expect.any(String) },
        },
      });
      expect(await probe('/health/live')).toEqual({ status: 200, body: { status: 'ok' } });
    } finally {
      // Its connections back (Knex opens a new pool), so the server closes as usual.
      db.initialize();
    }
    expect(server.logs.some((line) => line.includes('"check":"database"') && line.includes('readiness check failed'))).toBe(true);
    expect((await probe('/health/ready')).status).toBe(200);
  });
});
