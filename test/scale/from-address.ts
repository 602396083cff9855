import { request } from 'node:http';

/**
 * A JSON request sent from a loopback address of the test's choosing (127.0.0.2, 127.0.0.3, …;
 * Linux routes all of 127/8 to the loopback device). The service counts rate limits and queues
 * password hashes per client address, so requests meant to stand for many people at once come
 * from many addresses, as they would, instead of all from 127.0.0.1.
 */
export function sendFrom(
  localAddress: string,
  url: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const target = new URL(path, url);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        method,
        localAddress,
        headers: { ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}), ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            // not JSON: keep the text
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** The n-th of a set of distinct loopback addresses (n from 0): 127.0.1.1, 127.0.1.2, … */
export const loopback = (n: number) => `127.0.${1 + Math.floor(n / 250)}.${1 + (n % 250)}`;
