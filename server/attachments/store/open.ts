/**
 * Which back end `STORAGE_URL` names, opened. Its own file so that the S3 back end, and the AWS
 * SDK with it, is loaded with `import()` only when a bucket is used: most processes store on the
 * local disk and never pay for loading it.
 */
import type { StorageTarget } from '../../config.ts';
import type { FileStore } from './file-store.ts';
import { LocalFileStore } from './local.ts';

/** The FileStore `STORAGE_URL` names. The S3 client is loaded only when a bucket is used. */
export async function openFileStore(target: StorageTarget, dataDir: string): Promise<FileStore> {
  if (target.kind === 'local') return new LocalFileStore(dataDir);
  const { S3FileStore } = await import('./s3.ts');
  return new S3FileStore(target, dataDir);
}
