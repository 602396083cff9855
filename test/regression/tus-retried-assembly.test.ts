/**
 * Issue 29, a review of the running hash: a tus upload's assembly was given the running SHA-1
 * itself, not a copy, and fed it the rest and digested it. An assembly that failed after that
 * (the stored file could not be linked) left a digested hash behind, and the next try (a HEAD
 * keeps a complete upload) failed with "Digest already called", or would have named the file
 * by a wrong SHA-1. Both for an ordinary upload and for a final upload whose first part was
 * hashed as it arrived.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.ts';
import { pdfBytes, sha1, SUBMISSION, whileStoringFails } from '../attachments/helpers.ts';
import { encodeMetadata, metadataFor, tusRequest, tusServerPerFile, type Person } from '../attachments/tus-helpers.ts';

const running = tusServerPerFile(beforeAll, afterAll);
let server: TestServer;
let author: Person;
beforeAll(() => {
  ({ server, author } = running);
});

const METADATA = encodeMetadata(metadataFor(SUBMISSION, 'pdf', 'paper.pdf'));

async function create(headers: Record<string, string>): Promise<string> {
  const res = await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: { 'Upload-Metadata': METADATA, ...headers } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.headers.get('location') ?? '';
}
const patch = (url: string, offset: number, body: Uint8Array) => tusRequest(server, 'PATCH', url, { token: author.token, headers: { 'Upload-Offset': String(offset) }, body });

async function storedAs(url: string): Promise<string | null> {
  const head = await tusRequest(server, 'HEAD', url, { token: author.token });
  expect(head.status).toBe(200);
  return head.headers.get('attachment-url');
}

async function readBack(data: Uint8Array): Promise<Buffer> {
  const res = await fetch(`${server.url}/pdf/${sha1(data)}.pdf`, { headers: { authorization: `Bearer ${author.token}` } });
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

describe('an assembly that failed is tried again from the parts, not from a spent hash', () => {
  it('an ordinary upload in three PATCHes', async () => {
    const data = pdfBytes(150_000);
    const url = await create({ 'Upload-Length': String(data.length) });
    expect((await patch(url, 0, data.subarray(0, 50_000))).status).toBe(204);
    expect((await patch(url, 50_000, data.subarray(50_000, 100_000))).status).toBe(204);
    const failed = await whileStoringFails(server.dataDir, () => patch(url, 100_000, data.subarray(100_000)));
    expect(failed.status).toBe(500);
    expect(await storedAs(url)).toBe(`/pdf/${sha1(data)}.pdf`);
    expect((await readBack(data)).equals(data)).toBe(true);
  });

  it('a final upload whose first part was hashed as it arrived', async () => {
    const data = pdfBytes(120_000);
    const first = await create({ 'Upload-Length': '70000', 'Upload-Concat': 'partial' });
    const second = await create({ 'Upload-Length': '50000', 'Upload-Concat': 'partial' });
    expect((await patch(first, 0, data.subarray(0, 70_000))).status).toBe(204);
    expect((await patch(second, 0, data.subarray(70_000))).status).toBe(204);
    const header = `final;${first} ${second}`;
    const failed = await whileStoringFails(server.dataDir, () => tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: { 'Upload-Metadata': METADATA, 'Upload-Concat': header } }));
    expect(failed.status).toBe(500);
    // The client's repeated POST answers the same final upload, kept now.
    const again = await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: { 'Upload-Metadata': METADATA, 'Upload-Concat': header } });
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(again.headers.get('attachment-url')).toBe(`/pdf/${sha1(data)}.pdf`);
    expect((await readBack(data)).equals(data)).toBe(true);
  });
});
