/**
 * A stand-in for Turnstile's `siteverify` on 127.0.0.1, port 0: each request's form (the secret,
 * the token as `response`, the caller's address) is kept in `seen`, and answered
 * `{ success: decide(form) }`. Give `url` to the server as `HUMAN_VERIFICATION_URL`.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Siteverify {
  url: string;
  /** Every form received, in order. */
  seen: URLSearchParams[];
  close(): Promise<void>;
}

export async function startSiteverify(decide: (form: URLSearchParams) => boolean): Promise<Siteverify> {
  const seen: URLSearchParams[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const form = new URLSearchParams(body);
      seen.push(form);
      res.setHeader('content-type', 'application/json').end(JSON.stringify({ success: decide(form) }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/siteverify`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Turnstile's rule for tokens: each is accepted once; here those starting `fresh-`. */
export function singleUseTokens(): (form: URLSearchParams) => boolean {
  const used = new Set<string>();
  return (form) => {
    const token = form.get('response') ?? '';
    const fresh = token.startsWith('fresh-') && !used.has(token);
    used.add(token);
    return fresh;
  };
}
