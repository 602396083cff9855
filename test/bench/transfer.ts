/**
 * Byte-moving load: chunked multipart uploads and whole-file downloads, over `node:http` with
 * keep-alive. autocannon is not used here: it turns every response body into a string, which
 * for 50 MB bodies would measure the load generator rather than the server.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Agent, request, type IncomingHttpHeaders } from 'node:http';

export const MB = 1024 * 1024;

/** A PDF of `size` bytes: the signature, then random bytes. */
export function pdfBytes(size: number): Buffer {
  const data = randomBytes(size);
  Buffer.from('%PDF-1.7\n').copy(data);
  return data;
}

/** A multipart/form-data body as a list of buffers around the file's bytes, which are not copied. */
function multipart(fields: Record<string, string | number>, filename: string, data: Buffer): { type: string; parts: Buffer[]; length: number } {
  const boundary = `----bench${randomBytes(12).toString('hex')}`;
  let head = '';
  for (const [name, value] of Object.entries(fields)) {
    head += `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  }
  head += `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/pdf\r\n\r\n`;
  const parts = [Buffer.from(head), data, Buffer.from(`\r\n--${boundary}--\r\n`)];
  return { type: `multipart/form-data; boundary=${boundary}`, parts, length: parts.reduce((n, p) => n + p.length, 0) };
}

/** Sends one body and answers the status and the JSON (or text) answer. */
function send(
  url: string,
  method: string,
  headers: Record<string, string>,
  parts: Buffer[],
  agent: Agent,
): Promise<{ status: number; body: unknown; headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON: keep the text
        }
        resolve({ status: res.statusCode ?? 0, body, headers: res.headers });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    for (const part of parts) req.write(part);
    req.end();
  });
}

export interface Upload {
  /** Where each chunk goes: the service's `/attachment/chunk`, or the bare busboy server. */
  url: string;
  headers: Record<string, string>;
  /** The multipart fields of chunk `index` (0-based) of `total`. */
  fields(index: number, total: number): Record<string, string | number>;
}

/**
 * Uploads `chunks` one after the other, as a browser's uploader does, each as a multipart body.
 * Answers the seconds it took and the last chunk's answer (the file's URL on the service).
 */
export async function uploadChunks(target: Upload, chunks: Buffer[]): Promise<{ seconds: number; last: unknown }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const started = performance.now();
  let last: unknown = null;
  try {
    for (const [index, data] of chunks.entries()) {
      const body = multipart(target.fields(index, chunks.length), 'paper.pdf', data);
      const answer = await send(target.url, 'PUT', { ...target.headers, 'content-type': body.type, 'content-length': String(body.length) }, body.parts, agent);
      if (answer.status !== 200) throw new Error(`chunk ${index} of ${target.url}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
      last = answer.body;
    }
  } finally {
    agent.destroy();
  }
  return { seconds: (performance.now() - started) / 1000, last };
}

/**
 * Uploads `chunks` one after the other with the tus protocol (1.0.0), as a tus client does: a
 * `POST` to `endpoint` that creates an upload of their total length, then one `PATCH` of raw
 * bytes per chunk at its offset, each checked against the offset the server answers.
 */
export async function uploadTus(endpoint: string, chunks: Buffer[]): Promise<{ seconds: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const total = chunks.reduce((n, c) => n + c.length, 0);
  const started = performance.now();
  try {
    const created = await send(endpoint, 'POST', { 'tus-resumable': '1.0.0', 'upload-length': String(total), 'content-length': '0' }, [], agent);
    const location = created.headers.location;
    if (created.status !== 201 || !location) throw new Error(`tus POST ${endpoint}: ${created.status} ${JSON.stringify(created.body).slice(0, 300)}`);
    const upload = new URL(location, endpoint).href;
    let offset = 0;
    for (const [index, data] of chunks.entries()) {
      const answer = await send(
        upload,
        'PATCH',
        { 'tus-resumable': '1.0.0', 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream', 'content-length': String(data.length) },
        [data],
        agent,
      );
      offset += data.length;
      if (answer.status !== 204 || answer.headers['upload-offset'] !== String(offset)) {
        throw new Error(`tus chunk ${index} of ${upload}: ${answer.status}, offset ${answer.headers['upload-offset']} ${JSON.stringify(answer.body).slice(0, 300)}`);
      }
    }
  } finally {
    agent.destroy();
  }
  return { seconds: (performance.now() - started) / 1000 };
}

/** `data` cut into `size`-byte pieces (views, not copies). */
export function split(data: Buffer, size: number): Buffer[] {
  const parts: Buffer[] = [];
  for (let offset = 0; offset < data.length; offset += size) parts.push(data.subarray(offset, offset + size));
  return parts;
}

/**
 * Downloads `url` over `connections` keep-alive connections, again and again, for `seconds`
 * (after a one-second warm-up), throwing the bytes away. Answers MB/s, counting only
 * downloads that completed with 200 and the expected length.
 */
export async function downloadRate(url: string, headers: Record<string, string>, expectedBytes: number, connections: number, seconds: number): Promise<{ mbPerSecond: number; downloads: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const once = () =>
    new Promise<number>((resolve, reject) => {
      const req = request(url, { headers, agent }, (res) => {
        let bytes = 0;
        res.on('data', (chunk: Buffer) => (bytes += chunk.length));
        res.on('end', () => (res.statusCode === 200 && bytes === expectedBytes ? resolve(bytes) : reject(new Error(`${url}: ${res.statusCode}, ${bytes} bytes`))));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });
  const loop = async (until: number) => {
    let bytes = 0;
    let count = 0;
    while (performance.now() < until) {
      bytes += await once();
      count += 1;
    }
    return { bytes, count };
  };
  try {
    const warm = performance.now() + 1000;
    await Promise.all(Array.from({ length: connections }, () => loop(warm)));
    const started = performance.now();
    const results = await Promise.all(Array.from({ length: connections }, () => loop(started + seconds * 1000)));
    const elapsed = (performance.now() - started) / 1000;
    const bytes = results.reduce((n, r) => n + r.bytes, 0);
    return { mbPerSecond: bytes / MB / elapsed, downloads: results.reduce((n, r) => n + r.count, 0) };
  } finally {
    agent.destroy();
  }
}

/** A process's resident memory, in bytes, from `/proc/<pid>/status` (Linux). */
export async function residentBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
  if (!kb) throw new Error(`no VmRSS for ${pid}`);
  return Number(kb) * 1024;
}

/** Samples a process's resident memory every `everyMs` until `stop()`; answers the largest. */
export function sampleResident(pid: number, everyMs = 20): { stop(): Promise<number> } {
  let peak = 0;
  let running = true;
  const done = (async () => {
    while (running) {
      peak = Math.max(peak, await residentBytes(pid));
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await done;
      return peak;
    },
  };
}
