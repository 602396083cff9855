/**
 * Issue 29, an independent review of the first tus commit: a final upload cut by a crash was
 * lost (its parts were forgotten before it was kept, and the client's repeated POST got 404);
 * a person could keep any number of tus uploads open; and the tus routes' same-origin refusal
 * said the body had to be JSON.
 */
import { finalKey } from '../../server/attachments/tus-requests.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import type { TestServer } from '../helpers/server.ts';
import { pdfBytes, sha1, SUBMISSION } from '../attachments/helpers.ts';
import { encodeMetadata, metadataFor, signedInPerson, tusRequest, tusServerPerFile, type Person } from '../attachments/tus-helpers.ts';

const running = tusServerPerFile(beforeAll, afterAll);
let server: TestServer;
let author: Person;
beforeAll(() => {
  ({ server, author } = running);
});

const METADATA = () => encodeMetadata(metadataFor(SUBMISSION, 'pdf', 'paper.pdf'));

/** A complete partial upload of `bytes`; answers its URL. */
async function part(bytes: Buffer): Promise<string> {
  const created = await tusRequest(server, 'POST', '/attachment/tus', {
    token: author.token,
    headers: { 'Upload-Length': String(bytes.length), 'Upload-Metadata': METADATA(), 'Upload-Concat': 'partial' },
  });
  expect(created.status).toBe(201);
  const url = created.headers.get('location') ?? '';
  const patched = await tusRequest(server, 'PATCH', url, { token: author.token, headers: { 'Upload-Offset': '0' }, body: bytes });
  expect(patched.status).toBe(204);
  return url;
}

describe('tus uploads, after the review', () => {
  it.each([
    ['this version', true],
    ['a process before the parts\' key (several share a database during an upgrade)', false],
  ])('a final upload cut by a crash before its file was kept is kept by the repeated POST, with its parts (its row written by %s)', async (_by, keyed) => {
    const id = `00000000-0000-4000-8000-00000000000${keyed ? 1 : 2}`;
    const data = pdfBytes(300_000);
    const urls = [await part(data.subarray(0, 100_000)), await part(data.subarray(100_000))];
    const concat = `final;${urls.join(' ')}`;
    // What a crash right after the final upload's row was written leaves: the row, complete, not kept.
    const [first, second] = urls.map((url) => url.split('/').pop() ?? '');
    await server.service.db('tus_uploads').insert({
      id,
      profile_id: author.id,
      invitation: SUBMISSION,
      field: 'pdf',
      extension: 'pdf',
      metadata: METADATA(),
      upload_length: data.length,
      upload_offset: data.length,
      parts: 0,
      concat: 'final',
      concat_header: concat,
      ...(keyed ? { concat_key: finalKey([first ?? '', second ?? '']) } : {}),
      created_at: Date.now(),
      expires_at: Date.now() + 60_000,
    });
    const again = await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: { 'Upload-Concat': concat, 'Upload-Metadata': METADATA() } });
    expect(again.status).toBe(201);
    expect(again.headers.get('location')).toMatch(new RegExp(`/attachment/tus/${id}$`));
    expect(again.headers.get('attachment-url')).toBe(`/pdf/${sha1(data)}.pdf`);
    const read = await fetch(`${server.url}${again.headers.get('attachment-url')}`, { headers: { Authorization: `Bearer ${author.token}` } });
    expect(Buffer.from(await read.arrayBuffer()).equals(data)).toBe(true);
    // The parts are gone once the file is kept; the final upload answers its URL from then on.
    for (const id of [first, second]) expect((await tusRequest(server, 'HEAD', `/attachment/tus/${id}`, { token: author.token })).status).toBe(404);
    const head = await tusRequest(server, 'HEAD', `/attachment/tus/${id}`, { token: author.token });
    expect(head.headers.get('attachment-url')).toBe(`/pdf/${sha1(data)}.pdf`);
  });

  it('a person keeps at most twenty tus uploads unfinished at once', async () => {
    const person = await signedInPerson(server, 'Many Uploads');
    const create = () => tusRequest(server, 'POST', '/attachment/tus', { token: person.token, headers: { 'Upload-Length': '1000', 'Upload-Metadata': METADATA() } });
    const made: string[] = [];
    for (let i = 0; i < 20; i += 1) {
      const created = await create();
      expect(created.status).toBe(201);
      made.push(created.headers.get('location') ?? '');
    }
    const refused = await create();
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ name: 'TooManyError', message: expect.stringContaining('At most 20 uploads') });
    expect(refused.headers.get('tus-resumable')).toBe('1.0.0');
    // Ending one makes room.
    expect((await tusRequest(server, 'DELETE', made[0] ?? '', { token: person.token })).status).toBe(204);
    expect((await create()).status).toBe(201);
  });

  it("refuses a cookie-authenticated body of another type on tus's routes in tus's words, with its headers", async () => {
    const created = await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: { 'Upload-Length': '10', 'Upload-Metadata': METADATA() } });
    // A page's request: the session's cookies, no bearer token.
    const browser = new Client(server.url);
    for (const [name, value] of author.client.jar) browser.jar.set(name, value);
    expect(browser.jar.size).toBeGreaterThan(0);
    const res = await browser.request('PATCH', new URL(created.headers.get('location') ?? '').pathname, 'not an octet stream', { 'Tus-Resumable': '1.0.0', 'Upload-Offset': '0', 'content-type': 'text/plain' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ name: 'BadRequestError', message: 'The body must be application/offset+octet-stream' });
    expect(res.headers.get('tus-resumable')).toBe('1.0.0');
  });

  it('a creation whose bytes are refused (a checksum that does not match) leaves no upload behind', async () => {
    const person = await signedInPerson(server, 'Bad Checksum');
    const data = pdfBytes(2000);
    const refused = await tusRequest(server, 'POST', '/attachment/tus', {
      token: person.token,
      headers: { 'Upload-Length': String(data.length), 'Upload-Metadata': METADATA(), 'Upload-Checksum': `sha1 ${Buffer.alloc(20).toString('base64')}` },
      body: data,
    });
    expect(refused.status).toBe(460);
    expect(refused.body).toMatchObject({ name: 'ValidationError', status: 460 });
    expect(refused.headers.get('location')).toBeNull();
    expect(await server.service.db('tus_uploads').where({ profile_id: person.id })).toEqual([]);
  });
});
