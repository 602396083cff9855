import { pino, type Logger } from 'pino';

/** Path segments that follow these prefixes are secrets (one-time tokens) and never logged. */
const SECRET_PATH = /^(\/(?:activate|activatable|activatelink|resettable|reset|user\/confirm))\/[^/?#]+/;
/** Query parameters that carry secrets. */
const SECRET_QUERY = new Set(['token', 'code', 'code_verifier', 'access_token', 'id_token_hint', 'refresh_token', 'password', 'interaction']);

/**
 * A URL fit for a log line: one-time tokens in the path and secret query parameters replaced.
 * A tRPC query carries its whole input in `input`, which may hold a token: it is never logged.
 */
export function redactUrl(url: string): string {
  const [pathPart = '', query] = url.split('?', 2);
  const path = pathPart.replace(SECRET_PATH, '$1/[redacted]');
  if (query === undefined) return path;
  const params = new URLSearchParams(query);
  const isTrpc = path.startsWith('/trpc/');
  for (const key of [...params.keys()]) {
    if (SECRET_QUERY.has(key) || (isTrpc && key === 'input')) params.set(key, '[redacted]');
  }
  return `${path}?${params.toString()}`;
}

/**
 * Structured JSON logs. Request and response headers are never logged (they carry cookies and
 * bearer tokens); bodies are never logged (they carry passwords). Without a destination they
 * go to stdout through a 4 KiB buffer written asynchronously: a synchronous write per request
 * was a tenth of a request's cost (`npm run bench`). Flush it before exiting (`main.ts` does).
 */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      redact: { paths: ['password', '*.password', 'token', '*.token', 'accessToken', 'refreshToken'], censor: '[redacted]' },
    },
    (destination as pino.DestinationStream | undefined) ?? pino.destination({ dest: 1, sync: false, minLength: 4096 }),
  );
}
