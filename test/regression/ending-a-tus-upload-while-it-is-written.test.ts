/**
 * Found by an independent fuzz. A tus `DELETE` sent while a `PATCH` of the same upload was still
 * receiving its last bytes removed the upload's row under that request: the `PATCH` then kept the
 * file, found no upload to record it in, and answered 500, leaving the file on disk and recorded
 * nowhere. The `DELETE` now waits its turn as a second `PATCH` does (423), and ends the upload
 * once the `PATCH` has.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdfBytes, sha1, SUBMISSION } from '../attachments/helpers.ts';
import { encodeMetadata, metadataFor, tusRequest, tusServerPerFile } from '../attachments/tus-helpers.ts';
import { waitUntil } from '../helpers/wait.ts';

const files = tusServerPerFile(beforeAll, afterAll);

describe('a DELETE while a PATCH is writing the upload', () => {
  it('is 423 until the PATCH ends; the PATCH keeps and records its file, and the DELETE then ends the upload', async () => {
    const { server, author } = files;
    const data = pdfBytes(200_000);
    const created = await tusRequest(server, 'POST', '/attachment/tus', { token: author.token, headers: { 'Upload-Length': String(data.length), 'Upload-Metadata': encodeMetadata(metadataFor(SUBMISSION, 'pdf', 'p.pdf')) } });
    expect(created.status).toBe(201);
    const url = created.headers.get('location') ?? '';
    const id = url.split('/').pop() ?? '';

    // The PATCH sends its first half, then holds the rest back.
    const target = new URL(url, server.url);
    const patch = request({ host: target.hostname, port: target.port, path: target.pathname, method: 'PATCH', headers: { 'Tus-Resumable': '1.0.0', 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream', 'Content-Length': String(data.length), Authorization: `Bearer ${author.token}` } });
    const answer = new Promise<number>((resolve, reject) => {
      patch.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      patch.on('error', reject);
    });
    patch.write(data.subarray(0, 100_000));
    await waitUntil(async () => (await server.service.db('tus_uploads').where({ id }).first('writer'))?.writer != null, 'writing the upload');

    const during = await tusRequest(server, 'DELETE', url, { token: author.token });
    expect(during.status).toBe(423);
    expect(during.body).toMatchObject({ name: 'BadRequestError', status: 423 });

    patch.end(data.subarray(100_000));
    expect(await answer).toBe(204);
    const head = await tusRequest(server, 'HEAD', url, { token: author.token });
    expect(head.headers.get('upload-offset')).toBe(String(data.length));
    const fileUrl = `/pdf/${sha1(data)}.pdf`;
    expect(head.headers.get('attachment-url')).toBe(fileUrl);
    expect(await server.service.db('uploads').where({ url: fileUrl }).count({ n: '*' }).first()).toEqual({ n: 1 });

    expect((await tusRequest(server, 'DELETE', url, { token: author.token })).status).toBe(204);
    expect((await tusRequest(server, 'HEAD', url, { token: author.token })).status).toBe(404);
  });
});
