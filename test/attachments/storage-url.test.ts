import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.ts';

const storage = (url?: string) => loadConfig({ DATA_DIR: '/tmp/x', ...(url === undefined ? {} : { STORAGE_URL: url }) }).storage;
const refusal = (url: string) => {
  try {
    storage(url);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`${url} was accepted`);
};

describe('STORAGE_URL', () => {
  it('unset, stores files on the local disk under DATA_DIR', () => {
    expect(storage()).toEqual({ kind: 'local' });
  });

  it('names an S3-compatible bucket, a key prefix, the endpoint, region and addressing style', () => {
    expect(storage('s3://peer-review?endpoint=http://127.0.0.1:9000&region=eu-west-3&forcePathStyle=true')).toEqual({
      kind: 's3',
      bucket: 'peer-review',
      prefix: '',
      endpoint: 'http://127.0.0.1:9000',
      region: 'eu-west-3',
      forcePathStyle: true,
    });
    expect(storage('s3://peer-review/prod/files/')).toEqual({
      kind: 's3',
      bucket: 'peer-review',
      prefix: 'prod/files/',
      endpoint: undefined,
      region: 'us-east-1',
      forcePathStyle: false,
    });
  });

  it('never carries credentials: they come from the AWS SDK’s own variables', () => {
    for (const url of ['s3://peer-review?accessKeyId=AKIA&secretAccessKey=shh', 's3://AKIA:shh@peer-review']) {
      const message = refusal(url);
      expect(message).toContain('AWS_ACCESS_KEY_ID');
      // The refusal repeats no part of the secret.
      expect(message).not.toContain('shh');
    }
  });

  it('refuses another scheme, a bad bucket name, an unknown parameter and bad values, saying which', () => {
    expect(refusal('file:///var/files')).toContain('STORAGE_URL must be s3://');
    expect(refusal('s3://Not_A_Bucket')).toContain('not a bucket name');
    expect(refusal('s3://peer-review?endpont=http://x')).toContain('unknown parameter endpont');
    expect(refusal('s3://peer-review?endpoint=ftp://x')).toContain('endpoint must be an http or https URL');
    expect(refusal('s3://peer-review?forcePathStyle=yes')).toContain('forcePathStyle must be true or false');
    expect(refusal('s3://peer-review/my%20files')).toContain('key prefix');
  });
});
