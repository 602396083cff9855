/**
 * Found by an independent race review. The upload allowances were counted, then written much
 * later: of uploads sent together, each counted before any other was written, and all passed.
 * Forty tus creations or chunked uploads at once all stayed open where 20 may, and twenty uploads
 * at once all went without the human-verification token due after the hour's allowance. Each
 * allowance is now counted so that the requests sent together are told apart.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdfBytes, SUBMISSION, venueWithAuthor } from '../attachments/helpers.ts';
import { encodeMetadata, metadataFor, tusRequest } from '../attachments/tus-helpers.ts';
import { sendMultipart, type Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ UPLOAD_HUMAN_VERIFICATION_AFTER: '3' });
  await venueWithAuthor(server);
});
afterAll(() => server.close());

/** A new person, signed in: each test spends its own allowances. */
async function person(): Promise<{ id: string; client: Client; token: string }> {
  const user = await createActiveUser(server);
  return { id: user.id, ...(await loggedIn(server, user.email)) };
}

const statuses = (replies: Array<{ status: number }>) => replies.map((r) => r.status).sort((a, b) => a - b);

describe('requests sent at once', () => {
  it('open at most 20 tus uploads', async () => {
    const { id, token } = await person();
    const headers = { 'Upload-Length': '1000', 'Upload-Metadata': encodeMetadata(metadataFor(SUBMISSION, 'pdf', 'p.pdf')), 'cf-turnstile-token': 'dev-ok' };
    const replies = await Promise.all(Array.from({ length: 40 }, () => tusRequest(server, 'POST', '/attachment/tus', { token, headers })));
    expect(replies.filter((r) => r.status === 201).length).toBeLessThanOrEqual(20);
    expect(replies.every((r) => r.status === 201 || r.status === 429), JSON.stringify(statuses(replies))).toBe(true);
    const open = await server.service.db('tus_uploads').where({ profile_id: id }).whereNull('url').count({ n: '*' }).first();
    expect(Number(open?.n)).toBe(replies.filter((r) => r.status === 201).length);
  });

  it('open at most 20 chunked uploads', async () => {
    const { id, client } = await person();
    const replies = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        sendMultipart(client, 'PUT', '/attachment/chunk', { invitationId: SUBMISSION, name: 'pdf', clientUploadId: `at-once-${i}`, chunkIndex: 0, totalChunks: 2 }, { filename: 'p.pdf', data: pdfBytes(1000) }, { 'cf-turnstile-token': 'dev-ok' }),
      ),
    );
    expect(replies.filter((r) => r.status === 200).length).toBeLessThanOrEqual(20);
    expect(replies.every((r) => r.status === 200 || r.status === 429), JSON.stringify(statuses(replies))).toBe(true);
    const open = await server.service.db('chunked_uploads').where({ profile_id: id }).whereNot({ status: 'done' }).count({ n: '*' }).first();
    expect(Number(open?.n)).toBe(replies.filter((r) => r.status === 200).length);
  });

  it('near the limit, open exactly as many as it leaves room for', async () => {
    const { id, client, token } = await person();
    const metadata = { 'Upload-Length': '1000', 'Upload-Metadata': encodeMetadata(metadataFor(SUBMISSION, 'pdf', 'p.pdf')), 'cf-turnstile-token': 'dev-ok' };
    for (let i = 0; i < 15; i += 1) expect((await tusRequest(server, 'POST', '/attachment/tus', { token, headers: metadata })).status).toBe(201);
    const chunks = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        sendMultipart(client, 'PUT', '/attachment/chunk', { invitationId: SUBMISSION, name: 'pdf', clientUploadId: `near-${i}`, chunkIndex: 0, totalChunks: 2 }, { filename: 'p.pdf', data: pdfBytes(1000) }, { 'cf-turnstile-token': 'dev-ok' }),
      ),
    );
    // The chunked uploads' limit is their own: twenty of them, whatever tus holds.
    expect(chunks.filter((r) => r.status === 200).length).toBe(10);
    const tus = await Promise.all(Array.from({ length: 10 }, () => tusRequest(server, 'POST', '/attachment/tus', { token, headers: metadata })));
    expect(statuses(tus)).toEqual([...Array<number>(5).fill(201), ...Array<number>(5).fill(429)]);
    const open = await server.service.db('tus_uploads').where({ profile_id: id }).whereNull('url').count({ n: '*' }).first();
    expect(Number(open?.n)).toBe(20);
  });

  it('go without a human-verification token only as far as the allowance', async () => {
    const { client } = await person();
    const replies = await Promise.all(Array.from({ length: 12 }, () => sendMultipart(client, 'PUT', '/attachment', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'p.pdf', data: pdfBytes(1000) })));
    expect(statuses(replies)).toEqual([200, 200, 200, ...Array<number>(9).fill(400)]);
    expect(replies.filter((r) => r.status === 400).every((r) => (r.body as { name: string }).name === 'HumanVerificationRequiredError')).toBe(true);
    // One at a time, as before: the allowance spent, a token lets the next one in.
    expect((await sendMultipart(client, 'PUT', '/attachment', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'p.pdf', data: pdfBytes(1000) }, { 'cf-turnstile-token': 'dev-ok' })).status).toBe(200);
  });
});
