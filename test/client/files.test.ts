/**
 * The client's uploads and downloads against the real server, with a proxy in between that
 * can cut the line, and its one refresh-and-retry on a 401.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError, createClient, type Client, type Progress } from '../../client/index.ts';
import { pdfBytes, sha1, SUBMISSION, venueWithAuthor } from '../attachments/helpers.ts';
import { serviceOrigins } from '../helpers/api-document.ts';
import { TestClock } from '../helpers/clock.ts';
import { startProxy, type CuttingProxy } from '../helpers/proxy.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { waitUntil } from '../helpers/wait.ts';

const MB = 1024 * 1024;
let server: TestServer;
const clock = new TestClock();
let proxy: CuttingProxy;
let email: string;

/** Every request a client sends, as `METHOD path`. */
function counting(): { fetch: typeof fetch; sent: string[] } {
  const sent: string[] = [];
  return {
    sent,
    fetch: (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      sent.push(`${init?.method ?? 'GET'} ${url.pathname}`);
      return fetch(input, init);
    },
  };
}

async function author(baseUrl = server.url, fetchImpl?: typeof fetch): Promise<Client> {
  const client = createClient({ baseUrl, fetch: fetchImpl });
  await client.login({ id: email, password: PASSWORD });
  return client;
}

/** A stored file as its uploader reads it back (`GET /pdf/{id}`), failing on anything but a 200. */
async function readBack(client: Client, url: string): Promise<Buffer> {
  const response = await fetch(`${server.url}${url}`, { headers: { authorization: `Bearer ${client.token}` } });
  expect(response.status).toBe(200);
  return readAll(response.body as ReadableStream<Uint8Array>);
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const part of stream) parts.push(part);
  return Buffer.concat(parts);
}

beforeAll(async () => {
  server = await startServer({}, undefined, { now: clock.now });
  await venueWithAuthor(server);
  email = (await createActiveUser(server, { fullname: 'Client Author' })).email;
  proxy = await startProxy(server.url);
  serviceOrigins.add(proxy.url);
});
afterAll(async () => {
  serviceOrigins.delete(proxy.url);
  await proxy.close();
  await server.close();
});

describe('attachments.upload', () => {
  it('sends a small file in one PUT /attachment and reports progress to the whole size', async () => {
    const { fetch: fetchImpl, sent } = counting();
    const client = await author(server.url, fetchImpl);
    const data = pdfBytes(300 * 1024);
    const progress: Progress[] = [];
    const { url } = await client.attachments.upload(new File([data], 'paper.pdf'), { invitationId: SUBMISSION, name: 'pdf', onProgress: (p) => progress.push(p) });
    expect(url).toMatch(/^\/pdf\/[0-9a-f]{40}\.pdf$/);
    expect(sent.filter((s) => s.startsWith('PUT'))).toEqual(['PUT /attachment']);
    expect(progress.at(-1)).toEqual({ loaded: data.length, total: data.length });
  });

  it('refuses, before sending anything, a file of the wrong type or over the field’s size', async () => {
    const { fetch: fetchImpl, sent } = counting();
    const client = await author(server.url, fetchImpl);
    const wrongType = await client.attachments.upload(new File([pdfBytes(1000)], 'paper.docx'), { invitationId: SUBMISSION, name: 'pdf' }).catch((e: unknown) => e);
    expect(wrongType).toBeInstanceOf(ApiError);
    expect(wrongType).toMatchObject({ status: 400, name: 'ValidationError', details: { path: 'file' }, message: 'The file must be of type pdf' });
    // A Blob that says it is 51 MB: nothing is read from it, so it costs no memory.
    const huge = new Blob([new Uint8Array(51 * MB)]);
    const tooLarge = await client.attachments.upload(huge, { invitationId: SUBMISSION, name: 'pdf', filename: 'huge.pdf' }).catch((e: unknown) => e);
    expect(tooLarge).toMatchObject({ status: 413, name: 'ValidationError', details: { path: 'file' } });
    expect(sent.filter((s) => s.startsWith('PUT'))).toEqual([]);
  });

  it('sends a large file in chunks, a few at a time, and the bytes read back match', async () => {
    const { fetch: fetchImpl, sent } = counting();
    const client = await author(server.url, fetchImpl);
    const data = pdfBytes(12 * MB);
    const progress: Progress[] = [];
    const { url } = await client.attachments.upload(new File([data], 'big.pdf'), {
      invitationId: SUBMISSION,
      name: 'pdf',
      chunkSize: 2 * MB,
      onProgress: (p) => progress.push({ ...p }),
    });
    expect(sent.filter((s) => s === 'PUT /attachment/chunk')).toHaveLength(6);
    expect(progress[0]).toEqual({ loaded: 0, total: data.length });
    expect(progress.at(-1)).toEqual({ loaded: data.length, total: data.length });
    expect(progress.map((p) => p.loaded)).toEqual([...progress.map((p) => p.loaded)].sort((a, b) => a - b));
    const stored = await readBack(client, url);
    expect(sha1(stored)).toBe(sha1(data));
  });

  it('retries a chunk whose connection was cut, and finishes', async () => {
    const client = await author(proxy.url);
    const data = pdfBytes(6 * MB);
    proxy.cutAfter(3 * MB);
    const cutsBefore = proxy.cuts;
    const { url } = await client.attachments.upload(new File([data], 'cut.pdf'), { invitationId: SUBMISSION, name: 'pdf', chunkSize: 1 * MB });
    expect(proxy.cuts).toBe(cutsBefore + 1);
    const stored = await readBack(client, url);
    expect(sha1(stored)).toBe(sha1(data));
  });

  it('after the line stays down, a second call resumes from the chunks the server holds', async () => {
    const { fetch: fetchImpl, sent } = counting();
    const client = await author(proxy.url, fetchImpl);
    const data = pdfBytes(8 * MB);
    const file = new File([data], 'resume.pdf', { lastModified: 1_700_000_000_000 });
    const options = { invitationId: SUBMISSION, name: 'pdf', chunkSize: 1 * MB, concurrency: 1, retries: 1 };
    proxy.cutAfter(4.5 * MB, { stayDown: true });
    const failed = await client.attachments.upload(file, options).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(TypeError);
    proxy.heal();

    sent.length = 0;
    const progress: Progress[] = [];
    const { url } = await client.attachments.upload(file, { ...options, onProgress: (p) => progress.push({ ...p }) });
    const resent = sent.filter((s) => s === 'PUT /attachment/chunk').length;
    expect(resent).toBeGreaterThan(0);
    expect(resent).toBeLessThan(8);
    expect(progress[0]?.loaded).toBe((8 - resent) * MB);
    const stored = await readBack(client, url);
    expect(sha1(stored)).toBe(sha1(data));
  });

  it('stops when its signal is aborted, and can be resumed later', async () => {
    const client = await author();
    const data = pdfBytes(6 * MB);
    const file = new File([data], 'cancel.pdf');
    const controller = new AbortController();
    const options = { invitationId: SUBMISSION, name: 'pdf', chunkSize: 1 * MB, concurrency: 1 };
    const cancelled = await client.attachments
      .upload(file, { ...options, signal: controller.signal, onProgress: (p) => (p.loaded >= 2 * MB ? controller.abort() : undefined) })
      .catch((e: unknown) => e);
    expect(cancelled).toMatchObject({ name: 'AbortError' });
    const progress: Progress[] = [];
    const { url } = await client.attachments.upload(file, { ...options, onProgress: (p) => progress.push({ ...p }) });
    expect(progress[0]?.loaded).toBeGreaterThanOrEqual(2 * MB);
    const stored = await readBack(client, url);
    expect(sha1(stored)).toBe(sha1(data));
  });
});

describe('attachments.upload, when things go wrong', () => {
  it('never continues another file’s upload: a file that differs only inside gets its own', async () => {
    const client = await author();
    const a = pdfBytes(6 * MB);
    const b = Buffer.from(a);
    b.fill(7, 3 * MB, 3 * MB + 100);
    const options = { invitationId: SUBMISSION, name: 'pdf', chunkSize: 1 * MB, concurrency: 1 };
    const controller = new AbortController();
    await client.attachments
      .upload(new Blob([a]), { ...options, filename: 'same.pdf', signal: controller.signal, onProgress: (p) => (p.loaded >= MB ? controller.abort() : undefined) })
      .catch(() => undefined);
    const { url } = await client.attachments.upload(new Blob([b]), { ...options, filename: 'same.pdf' });
    expect(sha1(await readBack(client, url))).toBe(sha1(b));
  });

  it('refuses to resume an upload id with other chunk boundaries', async () => {
    const client = await author();
    const data = pdfBytes(4 * MB);
    const options = { invitationId: SUBMISSION, name: 'pdf', clientUploadId: 'fixed-boundaries', concurrency: 1 };
    const controller = new AbortController();
    await client.attachments
      .upload(new File([data], 'b.pdf'), { ...options, chunkSize: MB, signal: controller.signal, onProgress: (p) => (p.loaded >= MB ? controller.abort() : undefined) })
      .catch(() => undefined);
    // 1.2 MB chunks: four of them too, but cut elsewhere.
    const refused = await client.attachments.upload(new File([data], 'b.pdf'), { ...options, chunkSize: Math.round(1.2 * MB) }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 400, name: 'ValidationError', details: { path: 'clientUploadId' } });
  });

  it('stops every chunk once one is refused for good: nothing goes on after it fails', async () => {
    const chunks: string[] = [];
    let inFlight = 0;
    const failing: typeof fetch = async (input, init) => {
      const url = String(input instanceof Request ? input.url : input);
      if (url.endsWith('/attachment/chunk')) {
        chunks.push(url);
        if (chunks.length === 2) {
          const body = { status: 400, name: 'ValidationError', message: 'refused for the test', details: { path: 'file' } };
          return new Response(JSON.stringify(body), { status: 400, headers: { 'content-type': 'application/json' } });
        }
      }
      inFlight += 1;
      return fetch(input, init).finally(() => {
        inFlight -= 1;
      });
    };
    const client = await author(server.url, failing);
    const error = await client.attachments
      .upload(new File([pdfBytes(10 * MB)], 'stops.pdf'), { invitationId: SUBMISSION, name: 'pdf', chunkSize: MB })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 400, message: 'refused for the test' });
    const sentWhenRejected = chunks.length;
    // Every request the client started has settled (the upload waits for its workers before it
    // rejects): none is left to send another chunk.
    await waitUntil(() => inFlight === 0, 'every request settled');
    expect(chunks.length).toBe(sentWhenRejected);
    expect(sentWhenRejected).toBeLessThan(10);
  });

  it('sends the human-verification token, once the server asks for one, with every request', async () => {
    const strict = await startServer({ UPLOAD_HUMAN_VERIFICATION_AFTER: '1' });
    try {
      await venueWithAuthor(strict);
      const person = await createActiveUser(strict, { fullname: 'Busy Uploader' });
      const client = createClient({ baseUrl: strict.url });
      await client.login({ id: person.email, password: PASSWORD });
      const options = { invitationId: SUBMISSION, name: 'pdf' };
      await client.attachments.upload(new File([pdfBytes(1000)], 'one.pdf'), options);
      const asked = await client.attachments.upload(new File([pdfBytes(1000)], 'two.pdf'), options).catch((e: unknown) => e);
      expect(asked).toMatchObject({ status: 400, name: 'HumanVerificationRequiredError' });
      const big = { ...options, chunkSize: MB, humanVerificationToken: 'dev-ok' };
      const { url } = await client.attachments.upload(new File([pdfBytes(3 * MB)], 'three.pdf'), big);
      expect(url).toMatch(/^\/pdf\//);
    } finally {
      await strict.close();
    }
  });
});

describe('attachments.download', () => {
  it("streams a note's file with its name, type, size and SHA-1", async () => {
    const client = await author();
    const data = pdfBytes(3 * MB);
    const { url } = await client.attachments.upload(new File([data], 'read-me.pdf'), { invitationId: SUBMISSION, name: 'pdf' });
    const me = (await client.api.accounts.profiles.query()).profiles[0];
    const note = await client.api.venue.postNote.mutate({
      invitation: SUBMISSION,
      content: {
        title: { value: 'Read me back' },
        authors: { value: ['Client Author'] },
        authorids: { value: [me?.id ?? ''] },
        abstract: { value: 'Bytes in, bytes out.' },
        pdf: { value: url },
      },
    });
    const progress: Progress[] = [];
    const file = await client.attachments.download({ id: note.id, name: 'pdf', onProgress: (p) => progress.push({ ...p }) });
    expect(file).toMatchObject({ contentType: 'application/pdf', size: data.length, sha1: sha1(data) });
    expect(file.filename).toMatch(/\.pdf$/);
    expect(sha1(await readAll(file.stream))).toBe(sha1(data));
    expect(progress.at(-1)).toEqual({ loaded: data.length, total: data.length });
    const missing = await client.attachments.download({ id: 'no-such-note' }).catch((e: unknown) => e);
    expect(missing).toMatchObject({ status: 404, name: 'NotFoundError' });
  });
});

describe('a 401', () => {
  /**
   * Logs in with a three-second session and moves the server's clock past its end. (A refreshed
   * token lives as long, from the moved clock on.)
   */
  async function expiredSession(fetchImpl: typeof fetch) {
    const client = createClient({ baseUrl: server.url, fetch: fetchImpl });
    const first = await client.login({ id: email, password: PASSWORD, expiresIn: 3 });
    clock.advance(4100);
    return { client, first };
  }

  it('makes the client refresh its session once and send the call again, calls in flight sharing the refresh', async () => {
    const { fetch: fetchImpl, sent } = counting();
    const { client, first } = await expiredSession(fetchImpl);
    sent.length = 0;
    const answers = await Promise.all([1, 2, 3].map(() => client.api.accounts.profiles.query()));
    expect(answers.map((a) => a.profiles.length)).toEqual([1, 1, 1]);
    expect(sent.filter((s) => s === 'POST /refreshToken')).toHaveLength(1);
    expect(client.token).not.toBe(first.token);
  });

  it('applies where a session is optional too: an expired one is refreshed, not taken for a guest', async () => {
    const owner = await author();
    const data = pdfBytes(100 * 1024);
    const { url } = await owner.attachments.upload(new File([data], 'mine.pdf'), { invitationId: SUBMISSION, name: 'pdf' });
    const me = (await owner.api.accounts.profiles.query()).profiles[0]?.id ?? '';
    const note = await owner.api.venue.postNote.mutate({ invitation: SUBMISSION, content: { title: { value: 'Expired reader' }, authors: { value: ['Client Author'] }, authorids: { value: [me] }, abstract: { value: 'x' }, pdf: { value: url } } });

    const { fetch: fetchImpl, sent } = counting();
    const { client } = await expiredSession(fetchImpl);
    sent.length = 0;
    const file = await client.attachments.download({ id: note.id });
    expect(sha1(await readAll(file.stream))).toBe(sha1(data));
    expect(sent).toEqual(['GET /attachment', 'POST /refreshToken', 'GET /attachment']);
  });

  it('is the caller’s when there is no session to refresh', async () => {
    const { fetch: fetchImpl, sent } = counting();
    const client = createClient({ baseUrl: server.url, token: 'not-a-token', fetch: fetchImpl });
    const error = await client.api.accounts.profiles.query().catch((e: unknown) => e);
    expect(error).toMatchObject({ data: { httpStatus: 401 } });
    expect(sent.filter((s) => s.startsWith('GET /trpc'))).toHaveLength(1);
  });
});
