import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cookieHeader } from '../helpers/cookies.ts';
import { Client, sendMultipart } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { singleUseTokens, startSiteverify } from '../helpers/siteverify.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';
import { waitUntil } from '../helpers/wait.ts';
import { filesUnder, pdfBytes, sha1, SUBMISSION, temporaryFiles, VENUE, venueWithAuthor } from './helpers.ts';

let server: TestServer;
let root: Client;
let author: Client;

beforeAll(async () => {
  server = await startServer();
  ({ root, author } = await venueWithAuthor(server));
  // A small field to test the size limit at its boundary: 0.01 MB = 10485 bytes.
  const res = await root.post('/invitations', {
    id: `${VENUE}/-/Small`,
    domain: VENUE,
    form: {
      doc: { order: 1, value: { param: { type: 'file', extensions: ['pdf'], maxSize: 0.01 } } },
      code: { order: 2, value: { param: { type: 'file', extensions: ['zip'], optional: true } } },
      title: { order: 3, value: { param: { type: 'string', optional: true } } },
    },
  });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
});
afterAll(async () => {
  await server.close();
});

const upload = (client: Client, fields: Record<string, string | number>, file?: { filename: string; data: Uint8Array }, headers?: Record<string, string>) =>
  sendMultipart(client, 'PUT', '/attachment', fields, file, headers);

describe('PUT /attachment', () => {
  it('stores a PDF under its SHA-1 and answers its URL; the same bytes are stored once', async () => {
    const data = pdfBytes(50_000);
    const res = await upload(author, { name: 'pdf', invitationId: SUBMISSION }, { filename: 'paper.pdf', data });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ url: `/pdf/${sha1(data)}.pdf` });
    const again = await upload(author, { invitationId: SUBMISSION, name: 'pdf' }, { filename: 'copy.PDF', data });
    expect(again.body).toEqual(res.body);
    const stored = (await filesUnder(server.dataDir)).filter((f) => f.includes(sha1(data)));
    expect(stored).toHaveLength(1);
    expect(await server.service.db('uploads').where({ url: `/pdf/${sha1(data)}.pdf` }).count({ n: '*' })).toEqual([{ n: 2 }]);
  });

  it('stores other files under /attachment with their extension', async () => {
    const data = Buffer.from('PK\u0003\u0004 a zip of sorts');
    const res = await upload(author, { name: 'code', invitationId: `${VENUE}/-/Small` }, { filename: 'code.zip', data });
    expect(res.body).toEqual({ url: `/attachment/${sha1(data)}.zip` });
  });

  it('needs a signed-in user', async () => {
    const res = await upload(new Client(server.url), { name: 'pdf', invitationId: SUBMISSION }, { filename: 'p.pdf', data: pdfBytes(100) });
    expect(res.status).toBe(401);
    expect(res.body.name).toBe('UnauthorizedError');
  });

  it('accepts a file of exactly maxSize bytes and refuses one byte more with 413, keeping nothing', async () => {
    const before = await filesUnder(server.dataDir);
    const exact = await upload(author, { name: 'doc', invitationId: `${VENUE}/-/Small` }, { filename: 'a.pdf', data: pdfBytes(10485) });
    expect(exact.status).toBe(200);
    const over = await upload(author, { name: 'doc', invitationId: `${VENUE}/-/Small` }, { filename: 'b.pdf', data: pdfBytes(10486) });
    expect(over.status).toBe(413);
    expect(over.body).toMatchObject({ status: 413, name: 'ValidationError', details: { path: 'file' } });
    const after = await filesUnder(server.dataDir);
    expect(after.length).toBe(before.length + 1);
    expect(await temporaryFiles(server.dataDir)).toEqual([]);
  });

  it('refuses a body far over maxSize as it arrives, even when the file comes before the fields', async () => {
    const before = await filesUnder(server.dataDir);
    const form = new FormData();
    form.append('file', new Blob([pdfBytes(3_000_000)]), 'big.pdf');
    form.append('name', 'doc');
    form.append('invitationId', `${VENUE}/-/Small`);
    const res = await fetch(`${server.url}/attachment`, {
      method: 'PUT',
      headers: { cookie: cookieHeader(author) },
      body: form,
    });
    expect(res.status).toBe(413);
    expect(await filesUnder(server.dataDir)).toEqual(before);
  });

  it.each([
    ['a .exe for a pdf field', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'virus.exe', data: pdfBytes(100) }, 'file'],
    ['bytes that are not a PDF', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'fake.pdf', data: Buffer.from('GIF89a not a pdf') }, 'file'],
    ['a name starting with a hyphen', { name: '-pdf', invitationId: SUBMISSION }, { filename: 'p.pdf', data: pdfBytes(100) }, 'name'],
    ['an 81-character name', { name: 'p'.repeat(81), invitationId: SUBMISSION }, { filename: 'p.pdf', data: pdfBytes(100) }, 'name'],
    ['a field that is not a file field', { name: 'title', invitationId: SUBMISSION }, { filename: 'p.pdf', data: pdfBytes(100) }, 'name'],
    ['an unknown invitation', { name: 'pdf', invitationId: 'Nowhere/-/X' }, { filename: 'p.pdf', data: pdfBytes(100) }, 'invitationId'],
    ['an unknown field', { name: 'pdf', invitationId: SUBMISSION, colour: 'blue' }, { filename: 'p.pdf', data: pdfBytes(100) }, 'colour'],
    ['a missing invitationId', { name: 'pdf' }, { filename: 'p.pdf', data: pdfBytes(100) }, 'invitationId'],
    ['a missing file', { name: 'pdf', invitationId: SUBMISSION }, undefined, 'file'],
  ] as const)('refuses %s with a 400 naming the field, keeping nothing', async (_what, fields, file, field) => {
    const before = await filesUnder(server.dataDir);
    const res = await upload(author, fields, file);
    expect(res.status).toBe(400);
    const reasons = res.body.errors ?? [res.body];
    expect(reasons).toContainEqual(expect.objectContaining({ details: expect.objectContaining({ path: field }) }));
    expect(await filesUnder(server.dataDir)).toEqual(before);
  });

  it('refuses an upload to a closed invitation', async () => {
    await root.post('/invitations', {
      id: `${VENUE}/-/Closed`,
      domain: VENUE,
      form: { doc: { order: 1, value: { param: { type: 'file', extensions: ['pdf'] } } } },
      duedate: Date.now() - 1,
    });
    const res = await upload(author, { name: 'doc', invitationId: `${VENUE}/-/Closed` }, { filename: 'p.pdf', data: pdfBytes(100) });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe(`The invitation ${VENUE}/-/Closed is closed`);
  });

  it('refuses X-HTTP-Method-Override, and a body that is not multipart', async () => {
    const override = await upload(author, { name: 'pdf', invitationId: SUBMISSION }, { filename: 'p.pdf', data: pdfBytes(100) }, { 'x-http-method-override': 'PUT' });
    expect(override.status).toBe(400);
    const json = await author.request('PUT', '/attachment', { name: 'pdf', invitationId: SUBMISSION });
    expect(json.status).toBe(400);
    expect(json.body.message).toBe('The body must be multipart/form-data');
  });

  it('removes the temporary file when the client goes away mid-upload', async () => {
    const url = new URL(server.url);
    const boundary = 'xBOUNDARYx';
    const head =
      `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\npdf\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="invitationId"\r\n\r\n${SUBMISSION}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.pdf"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.7\n`;
    const socket = connect(Number(url.port), url.hostname);
    await new Promise<void>((resolve) => socket.on('connect', resolve));
    const cookie = cookieHeader(author);
    socket.write(
      `PUT /attachment HTTP/1.1\r\nHost: ${url.host}\r\nCookie: ${cookie}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: 10000000\r\n\r\n${head}`,
    );
    socket.write(Buffer.alloc(200_000, 1));
    await waitUntil(async () => (await temporaryFiles(server.dataDir)).length > 0, 'receiving the file');
    expect((await temporaryFiles(server.dataDir)).length).toBe(1);
    socket.destroy();
    await waitUntil(async () => (await temporaryFiles(server.dataDir)).length === 0, 'removing the temporary file');
    expect(await temporaryFiles(server.dataDir)).toEqual([]);
  });
});

describe('the upload rate limit', () => {
  it('after the configured number of uploads an hour, asks for human verification', async () => {
    const limited = await startServer({ UPLOAD_HUMAN_VERIFICATION_AFTER: '2' });
    try {
      const { author: client } = await venueWithAuthor(limited);
      const send = (headers?: Record<string, string>) =>
        sendMultipart(client, 'PUT', '/attachment', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'p.pdf', data: pdfBytes(1000) }, headers);
      expect((await send()).status).toBe(200);
      expect((await send()).status).toBe(200);
      const third = await send();
      expect(third.status).toBe(400);
      expect(third.body.name).toBe('HumanVerificationRequiredError');
      expect((await send({ 'cf-turnstile-token': 'dev-ok' })).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});

describe('the upload rate limit, for chunks', () => {
  it("checks a chunked upload's token once, at its first chunk: openreview-web sends the same token with every chunk, and a token is accepted once", async () => {
    // A siteverify that accepts each token once, as Cloudflare's does.
    const siteverify = await startSiteverify(singleUseTokens());
    const limited = await startServer({ UPLOAD_HUMAN_VERIFICATION_AFTER: '1', HUMAN_VERIFICATION_URL: siteverify.url, HUMAN_VERIFICATION_SECRET: 's3cret' });
    try {
      const { author: client } = await venueWithAuthor(limited);
      const data = pdfBytes(3_000);
      const chunk = (clientUploadId: string, index: number, token?: string) =>
        sendMultipart(client, 'PUT', '/attachment/chunk', { name: 'pdf', invitationId: SUBMISSION, clientUploadId, chunkIndex: index, totalChunks: 3 }, { filename: 'p.pdf', data: data.subarray(index * 1000, (index + 1) * 1000) }, token ? { 'cf-turnstile-token': token } : {});
      // The hour's one upload without a token.
      expect((await sendMultipart(client, 'PUT', '/attachment', { name: 'pdf', invitationId: SUBMISSION }, { filename: 'p.pdf', data: pdfBytes(1000) })).status).toBe(200);

      // A new upload's first chunk needs a token; without one nothing of it is kept.
      const refused = await chunk('web-upload', 0);
      expect(refused.status).toBe(400);
      expect(refused.body.name).toBe('HumanVerificationRequiredError');
      expect((await client.get('/attachment/chunk/status?clientUploadId=web-upload')).status).toBe(404);

      // With one, every chunk of it goes in with that same token, as the web client sends them.
      for (const index of [0, 1]) expect((await chunk('web-upload', index, 'fresh-1')).status).toBe(200);
      const last = await chunk('web-upload', 2, 'fresh-1');
      expect(last.status, JSON.stringify(last.body)).toBe(200);
      expect(last.body.url).toMatch(/^\/pdf\/[0-9a-f]{40}\.pdf$/);

      // Another upload is checked again: the used token is refused, a new one accepted.
      expect((await chunk('second-upload', 0, 'fresh-1')).body.name).toBe('HumanVerificationRequiredError');
      expect((await chunk('second-upload', 0, 'fresh-2')).status).toBe(200);
    } finally {
      await limited.close();
      await siteverify.close();
    }
  });
});

describe('an uploaded file is the uploader\'s until a note holds it', () => {
  it('GET /pdf/{id} serves it to its uploader and refuses others', async () => {
    const data = pdfBytes(5000);
    const { body } = await upload(author, { name: 'pdf', invitationId: SUBMISSION }, { filename: 'p.pdf', data });
    const id = `${sha1(data)}.pdf`;
    const mine = await fetch(`${server.url}/pdf/${id}`, { headers: { cookie: cookieHeader(author) } });
    expect(mine.status).toBe(200);
    expect(sha1(new Uint8Array(await mine.arrayBuffer()))).toBe(sha1(data));
    expect(body.url).toBe(`/pdf/${id}`);
    // To anyone else it does not exist yet: no note holds it.
    const stranger = (await loggedIn(server, (await createActiveUser(server)).email)).client;
    expect((await stranger.get(`/pdf/${id}`)).status).toBe(404);
    expect((await new Client(server.url).get(`/pdf/${'0'.repeat(40)}.pdf`)).status).toBe(404);
    expect((await new Client(server.url).get('/pdf/..%2F..%2Fservice.sqlite')).status).toBe(404);
  });
});
