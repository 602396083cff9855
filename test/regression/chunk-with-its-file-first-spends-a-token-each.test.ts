/**
 * The failure (review of stop 57): past the hour's upload allowance a chunked upload's human
 * verification is checked at its first chunk only, as openreview-web sends one Turnstile token
 * with every chunk and a token is accepted once. The check ran when the file part began, with
 * the fields seen so far: a client sending each chunk's file before its fields had sent none,
 * so every chunk was taken for a new upload's first, spent its token again and was refused from
 * the second on. The check now waits for the fields that name the upload, or for the whole
 * body, whose file is let go if the check refuses it.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { pdfBytes, SUBMISSION, temporaryFiles, venueWithAuthor } from '../attachments/helpers.ts';
import { cookieHeader } from '../helpers/cookies.ts';
import { sendMultipart, type Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { singleUseTokens, startSiteverify, type Siteverify } from '../helpers/siteverify.ts';

let siteverify: Siteverify;
let server: TestServer;
let author: Client;

beforeAll(async () => {
  siteverify = await startSiteverify(singleUseTokens());
  server = await startServer({ UPLOAD_HUMAN_VERIFICATION_AFTER: '1', HUMAN_VERIFICATION_URL: siteverify.url, HUMAN_VERIFICATION_SECRET: 's3cret' });
  ({ author } = await venueWithAuthor(server));
});
afterAll(async () => {
  await server.close();
  await siteverify.close();
});

const data = pdfBytes(3_000);

/** A chunk as a client that puts the file part before the fields sends it. */
async function fileFirst(clientUploadId: string, index: number, token: string) {
  const form = new FormData();
  form.append('file', new Blob([data.subarray(index * 1000, (index + 1) * 1000)]), 'p.pdf');
  for (const [name, value] of Object.entries({ name: 'pdf', invitationId: SUBMISSION, clientUploadId, chunkIndex: index, totalChunks: 3 })) form.append(name, String(value));
  const res = await fetch(`${server.url}/attachment/chunk`, { method: 'PUT', headers: { cookie: cookieHeader(author), 'cf-turnstile-token': token }, body: form });
  return { status: res.status, body: (await res.json()) as { name?: string; url?: string } };
}

it("checks a file-first chunked upload's token once, at its first chunk, and keeps nothing of a refused chunk", async () => {
  // The hour's one upload without a token; every further one needs one.
  expect((await sendMultipart(author, 'PUT', '/attachment', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'p.pdf', data: pdfBytes(1000) })).status).toBe(200);
  expect((await fileFirst('file-first', 0, 'not-fresh')).body.name).toBe('HumanVerificationRequiredError');
  expect(await temporaryFiles(server.dataDir)).toEqual([]);
  expect((await author.get('/attachment/chunk/status?clientUploadId=file-first')).status).toBe(404);

  for (const index of [0, 1]) expect((await fileFirst('file-first', index, 'fresh-1')).status).toBe(200);
  const last = await fileFirst('file-first', 2, 'fresh-1');
  expect(last.status, JSON.stringify(last.body)).toBe(200);
  expect(last.body.url).toMatch(/^\/pdf\/[0-9a-f]{40}\.pdf$/);
});
