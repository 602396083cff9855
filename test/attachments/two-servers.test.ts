/**
 * Two servers sharing one database and one file store, as several processes behind a load
 * balancer do: the last two chunks of an upload, sent at once, arrive one at each. Each server
 * saw only its own chunk being saved; both must still answer the URL, which only works when what
 * decides the answer (which chunk requests are under way, who assembles) is in the database.
 *
 * "At once" is made exact here: the last chunk's body is held back until the server has its
 * fields (its request is then under way), the other chunk is sent meanwhile and finishes first.
 * Two requests merely started together may reach the servers one after the other (the first
 * answered before the second is read at all), and a request not yet read cannot be waited for.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { cookieHeader } from '../helpers/cookies.ts';
import { Client, sendMultipart } from '../helpers/http.ts';
import { startServer, tempDir, type TestServer } from '../helpers/server.ts';
import { waitUntil } from '../helpers/wait.ts';
import { pdfBytes, sendHeldChunk, sha1, SUBMISSION, submissionContent, venueWithAuthor } from './helpers.ts';
import { S3RVER_CREDENTIALS, startS3rver, type TestBucket } from './s3rver.ts';

const MB = 1024 * 1024;
const CHUNKS = 4;

let bucket: TestBucket;
beforeAll(async () => {
  bucket = await startS3rver();
  vi.stubEnv('AWS_ACCESS_KEY_ID', S3RVER_CREDENTIALS.accessKeyId);
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', S3RVER_CREDENTIALS.secretAccessKey);
});
afterAll(async () => {
  await bucket?.close();
  vi.unstubAllEnvs();
});

describe.each([
  ['on the local disk of their shared data folder', (): Record<string, string> => ({})],
  ['in an S3-compatible bucket', (): Record<string, string> => ({ STORAGE_URL: bucket.storageUrl('two-servers/') })],
])('two servers on one data folder, storing files %s', (_name, env) => {
  let dir: string;
  let first: TestServer;
  let second: TestServer;
  let atFirst: Client;
  let atSecond: Client;
  let authorId: string;

  beforeAll(async () => {
    dir = await tempDir();
    first = await startServer(env(), dir);
    // One service behind a load balancer: one public address (its sessions' issuer) for both.
    second = await startServer({ ...env(), BASE_URL: first.url }, dir);
    ({ author: atFirst, authorId } = await venueWithAuthor(first));
    // The same session, presented to the other server.
    atSecond = new Client(second.url);
    for (const [name, value] of atFirst.jar) atSecond.jar.set(name, value);
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const send = (client: Client, clientUploadId: string, index: number, data: Buffer) =>
    sendMultipart(client, 'PUT', '/attachment/chunk', { name: 'pdf', invitationId: SUBMISSION, clientUploadId, chunkIndex: index, totalChunks: CHUNKS }, {
      filename: 'paper.pdf',
      data: data.subarray(index * MB, (index + 1) * MB),
    });

  // Two servers, a venue and a race: seconds alone, far more beside other suites on two cores.
  it('each receiving one of the last two chunks at once, both answer the URL', { timeout: 120_000 }, async () => {
    // A few uploads: which server finishes first varies from one to the next.
    for (let round = 0; round < 5; round += 1) {
      const id = `two-servers-${round}`;
      const data = pdfBytes(CHUNKS * MB - 100);
      for (let i = 0; i < CHUNKS - 2; i += 1) expect((await send(i % 2 === 0 ? atFirst : atSecond, id, i, data)).status).toBe(200);
      const url = `/pdf/${sha1(data)}.pdf`;
      const released = Promise.withResolvers<void>();
      const held = sendHeldChunk(atSecond, { name: 'pdf', invitationId: SUBMISSION, clientUploadId: id, chunkIndex: CHUNKS - 1, totalChunks: CHUNKS }, data.subarray((CHUNKS - 1) * MB), released.promise);
      await waitUntil(async () => (await first.service.db('upload_arrivals')).length === 1, 'the held chunk under way');
      const other = send(atFirst, id, CHUNKS - 2, data);
      // The other chunk, all in, waits for the one under way rather than answer that it is missing.
      await waitUntil(async () => (await first.service.db('chunked_uploads').where({ client_upload_id: id }).first('received_bytes'))?.received_bytes === (CHUNKS - 1) * MB, 'the other chunk recorded');
      released.resolve();
      const [a, b] = await Promise.all([other, held]);
      expect([a.body, b.body]).toEqual([{ url }, { url }]);
      // Either server serves the file the other assembled.
      const note = await atSecond.post('/notes', { invitation: SUBMISSION, content: submissionContent(authorId, url) });
      expect(note.status).toBe(200);
      const cookie = cookieHeader(atFirst);
      const res = await fetch(`${first.url}/pdf?id=${note.body.id}`, { headers: { cookie } });
      expect(Buffer.from(await res.arrayBuffer()).equals(data)).toBe(true);
    }
    expect(await first.service.db('upload_arrivals')).toEqual([]);
  });
});
