import { createRequire } from 'node:module';
import { rm } from 'node:fs/promises';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { tempDir } from '../helpers/server.ts';

/** The part of s3rver 3.7.1 the tests use (it ships no types). */
interface S3rverServer {
  run(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
}
const S3rver = createRequire(import.meta.url)('s3rver') as new (options: {
  address: string;
  port: number;
  directory: string;
  silent: boolean;
}) => S3rverServer;

/** s3rver's own credentials: it checks request signatures against them. */
export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export interface TestBucket {
  /** The store's address (`http://127.0.0.1:<port>`). */
  endpoint: string;
  bucket: string;
  /** A client with s3rver's credentials, to look into the bucket from the test. */
  client: S3Client;
  /** `STORAGE_URL` for this bucket, under `prefix`. */
  storageUrl(prefix?: string): string;
  /** What a server process needs to use the bucket: `STORAGE_URL` and s3rver's credentials. */
  env(prefix?: string): Record<string, string>;
  close(): Promise<void>;
}

/**
 * A real S3-compatible store: s3rver on 127.0.0.1 at a port the system picks, keeping its
 * objects in a temporary folder, with one empty bucket.
 *
 * What s3rver 3.7.1 does (read in its lib/controllers and lib/routes.js): PUT, GET, HEAD,
 * DELETE, CopyObject, ListObjectsV2 with prefixes and continuation, multipart uploads (create,
 * parts, complete), single byte ranges, and 304 to If-None-Match on GET. What it does not:
 * conditional writes (`If-None-Match: *` on PUT or copy is ignored: the store's HEAD-first check
 * is all that keeps a key from being replaced there), aborting a multipart upload (refused with
 * MethodNotAllowed: the store ignores that failure), listing multipart uploads, and suffix
 * ranges (`bytes=-10` is read as bytes 0 to 10: the store always sends both ends).
 */
export async function startS3rver(bucket = 'peer-review-files'): Promise<TestBucket> {
  const directory = await tempDir('s3rver-');
  const server = new S3rver({ address: '127.0.0.1', port: 0, directory, silent: true });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: S3RVER_CREDENTIALS,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  const storageUrl = (prefix = '') => `s3://${bucket}/${prefix}?endpoint=${encodeURIComponent(endpoint)}&region=us-east-1&forcePathStyle=true`;
  return {
    endpoint,
    bucket,
    client,
    storageUrl,
    env: (prefix = '') => ({ STORAGE_URL: storageUrl(prefix), AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey }),
    async close() {
      client.destroy();
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
