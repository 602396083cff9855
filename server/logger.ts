import { IncomingMessage } from 'node:http';
import { pino, type Logger } from 'pino';

declare module 'http' {
  interface IncomingMessage {
    /** The request's id (`requestLogger`): the caller's `X-Request-Id` when sane, else a fresh UUID. */
    id: string | number | object;
    /** A logger bound to the request (`requestLogger`). */
    log: Logger;
  }
}

/**
 * Path segments that carry one-time tokens: whatever follows them is a secret. Every route
 * with a `:token` parameter is here (`test/http/logging.test.ts` checks the route table).
 * Matched whatever the letter case and percent-encoding, anywhere in the path: Express routes
 * `/ACTIVATABLE/x` and `/activatable/x/` alike, and a request that reaches no route may still
 * carry a real token.
 */
const SECRET_PREFIXES: readonly string[][] = [['activate'], ['activatable'], ['activatelink'], ['resettable'], ['reset'], ['user', 'confirm']];
/**
 * Query parameters whose names say they carry a secret (or a whole tRPC input, which may hold
 * one), matched whatever the letter case: `token`, `code`, `code_verifier`, `access_token`,
 * `id_token_hint`, `client_secret`, `password`, `interaction`, `input`…; and email addresses
 * (`?email=` of the pages and of profile lookups), which are personal, not needed to debug.
 */
const SECRET_QUERY = /token|code|verifier|pass|secret|key|hint|interaction|csrf|input|session|assertion|auth|otp|cookie|jwt|sig|email/i;
const REDACTED = '[redacted]';
const REDACTED_IN_QUERY = encodeURIComponent(REDACTED);
/** Whatever `SECRET_PREFIXES` (through each one's last segment) and `SECRET_QUERY` could match, or a percent sign. */
const MAYBE_SECRET = new RegExp(['%', ...SECRET_PREFIXES.map((prefix) => prefix.at(-1)!), SECRET_QUERY.source].join('|'), 'i');

/** A path segment as a route would see it: percent-decoded when it can be, lower case. */
function normalised(segment: string): string {
  try {
    return decodeURIComponent(segment).toLowerCase();
  } catch {
    return segment.toLowerCase();
  }
}

/** The path with everything after a secret-carrying prefix replaced. */
function redactPath(path: string): string {
  const segments = path.split('/');
  const names = segments.map(normalised);
  for (let i = 0; i < segments.length; i++) {
    for (const prefix of SECRET_PREFIXES) {
      // Empty segments (`//`) in between are skipped, as a lenient router might.
      let at = i;
      let matched = 0;
      while (matched < prefix.length && at < segments.length) {
        if (names[at] === '') {
          if (matched === 0) break;
          at++;
          continue;
        }
        if (names[at] !== prefix[matched]) break;
        matched++;
        at++;
      }
      if (matched === prefix.length && segments.slice(at).some((s) => s !== '')) {
        return [...segments.slice(0, at), REDACTED].join('/');
      }
    }
  }
  return path;
}

/**
 * A URL fit for a log line: one-time tokens in the path and secret query parameters replaced.
 * A tRPC query carries its whole input in `input`, which may hold a token: it is never logged.
 */
export function redactUrl(url: string): string {
  return redactUrlAt(url, 0);
}

/** `redactUrl` of a URL `depth` parameters deep (one carried in another's value). */
function redactUrlAt(url: string, depth: number): string {
  // Most URLs have nothing to redact, and say so without being taken apart: no percent-encoding
  // (which could spell a word otherwise hidden) and none of the words a secret's path segment or
  // query parameter name holds.
  if (!MAYBE_SECRET.test(url)) return url;
  const cut = url.indexOf('?');
  const path = redactPath(cut < 0 ? url : url.slice(0, cut));
  if (cut < 0) return path;
  return `${path}?${url.slice(cut + 1).split('&').map((parameter) => redactParameter(parameter, depth)).join('&')}`;
}

/** A plain parameter name: nothing in it that form encoding would spell otherwise. */
const PLAIN_NAME = /^[\w.-]*$/;

/**
 * One `name=value` of a query: as sent, or its name (decoded as `URLSearchParams` decodes it,
 * then encoded as it encodes it) with the value redacted; or, when its value is a URL (a path or
 * an http address: `next=/account/device?user_code=…`, where a sign-in returns to), that URL
 * redacted as `redactUrl` redacts one, its fragment (`#access_token=…`) dropped whole. Any other
 * parameter is not taken apart, which sign-ins' authorization requests are mostly made of.
 */
function redactParameter(parameter: string, depth: number): string {
  const end = parameter.indexOf('=');
  const sent = end < 0 ? parameter : parameter.slice(0, end);
  const name = PLAIN_NAME.test(sent) ? sent : (new URLSearchParams(parameter).keys().next().value ?? '');
  if (SECRET_QUERY.test(name)) return PLAIN_NAME.test(name) ? `${name}=${REDACTED_IN_QUERY}` : new URLSearchParams([[name, REDACTED]]).toString();
  // Read only when it may be a URL (as sent: `/` or `http` first, perhaps percent-encoded).
  if (end < 0 || depth > 2 || !/^(\/|%2F|https?(:|%3A))/i.test(parameter.slice(end + 1))) return parameter;
  const value = new URLSearchParams(parameter).values().next().value ?? '';
  const hash = value.indexOf('#');
  const inner = redactUrlAt(hash < 0 ? value : value.slice(0, hash), depth + 1) + (hash < 0 ? '' : `#${REDACTED}`);
  return inner === value ? parameter : `${sent}=${encodeURIComponent(inner)}`;
}

/**
 * Quoted text in an error's message is what the request or a query put there: a body parser's
 * quoted parameter, a router's undecodable path segment (`Failed to decode param '…'`), the
 * values Knex writes into a failed query's SQL (`values ('a@b.org', '…')`). It is replaced.
 */
function scrub(text: string): string {
  return text.replace(/'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.)*"/g, `'${REDACTED}'`);
}

/** The properties of an error that say what failed and never quote the request. */
const ERROR_FIELDS = ['code', 'errno', 'syscall', 'status', 'statusCode'] as const;
const MAX_CAUSES = 3;

/**
 * An error as a log line shows it: its class, its message and stack with quoted text scrubbed,
 * a few properties that say what failed, and its causes. Nothing else: body parsers' errors
 * carry the raw body (`body`), tRPC's and Zod's the input. Whatever is thrown, this never
 * throws and never walks anything deep.
 */
export function serializeError(value: unknown, depth = 0): Record<string, unknown> {
  // pino-http hands over pino's own serialization; the thrown value is its `raw`.
  const error: unknown = (value as { raw?: unknown } | null)?.raw ?? value;
  if (!(error instanceof Error)) return { type: typeof error, message: '(not an Error)' };
  const message = scrub(String(error.message));
  const out: Record<string, unknown> = {
    type: error.constructor?.name ?? 'Error',
    message,
    stack: typeof error.stack === 'string' ? error.stack.replace(String(error.message), message) : undefined,
  };
  const fields = error as unknown as Record<string, unknown>;
  for (const key of ERROR_FIELDS) {
    const field = fields[key];
    if (typeof field === 'string' || typeof field === 'number') out[key] = typeof field === 'string' ? scrub(field) : field;
  }
  // A body parser's `type` (`entity.too.large`) says what failed.
  if (typeof fields.type === 'string') out.errorType = scrub(fields.type);
  if (error.cause !== undefined && depth < MAX_CAUSES) out.cause = serializeError(error.cause, depth + 1);
  return out;
}

/**
 * What a log line says of a request: its id, method and URL with secrets replaced. Never headers
 * or body. The URL is the one the client sent (`originalUrl`): a router mounted under a prefix
 * (`/trpc`) strips it from `url` while its handler runs, and the line is written then.
 */
export function serializeRequest(req: { id?: unknown; method?: unknown; url?: unknown; originalUrl?: unknown }): Record<string, unknown> {
  const url = typeof req.originalUrl === 'string' ? req.originalUrl : req.url;
  return { id: req.id, method: req.method, url: typeof url === 'string' ? redactUrl(url) : undefined };
}

/** How long a line may wait in the log's buffer: a quiet server's lines reach stdout within this. */
const LOG_FLUSH_MS = 1000;

/**
 * Structured JSON logs. Request and response headers are never logged (they carry cookies and
 * bearer tokens); bodies are never logged (they carry passwords), and errors are logged through
 * `serializeError`, which drops what they carry of the request. Without a destination they go
 * to stdout through a 4 KiB buffer written asynchronously: a synchronous write per request was
 * a tenth of a request's cost (`npm run bench`). The buffer is also written every
 * `LOG_FLUSH_MS`, so that a quiet server's lines do not wait for 4 KiB of others, and a process
 * killed without warning (the kernel's OOM kill) loses at most that last second. Flush it before
 * exiting (`main.ts` does).
 */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      serializers: { err: serializeError, error: serializeError, req: serializeRequest },
      redact: {
        paths: ['password', '*.password', 'token', '*.token', 'accessToken', 'refreshToken', 'body', '*.body', 'input', '*.input'],
        censor: '[redacted]',
      },
    },
    (destination as pino.DestinationStream | undefined) ?? pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: LOG_FLUSH_MS }),
  );
}

const BASE_LOGGER = Symbol('the logger of the request log');
const BOUND_LOGGER = Symbol('the logger bound to the request');

/**
 * `req.log`, made on first use from the logger `requestLogger` left on the request. A getter on
 * the requests' prototype, not on each request: a getter defined on an object per request made
 * every later property read of the request slower (measured: 32 → 47 µs of CPU per request).
 */
function installRequestLog(): void {
  if (Object.getOwnPropertyDescriptor(IncomingMessage.prototype, 'log')) return;
  Object.defineProperty(IncomingMessage.prototype, 'log', {
    configurable: true,
    get(this: IncomingMessage & { [BASE_LOGGER]?: Logger; [BOUND_LOGGER]?: Logger }) {
      return (this[BOUND_LOGGER] ??= this[BASE_LOGGER]?.child({ req: this }));
    },
    set(this: IncomingMessage & { [BOUND_LOGGER]?: Logger }, value: Logger) {
      this[BOUND_LOGGER] = value;
    },
  });
}

/** The parts of a request and its response the request log reads and sets. */
interface LoggedRequest {
  id?: unknown;
  method?: string;
  url?: string;
  readableAborted?: boolean;
  log?: Logger;
}
interface LoggedResponse {
  statusCode: number;
  writableEnded: boolean;
  err?: unknown;
  once(event: 'finish' | 'close' | 'error', listener: (error?: unknown) => void): unknown;
  removeListener(event: 'finish' | 'close' | 'error', listener: (error?: unknown) => void): unknown;
}

/**
 * One line per request, written when its answer is finished (or the connection closes first):
 * `{"req":{id,method,url},"res":{statusCode},"responseTime":ms,"msg":"request completed"}`, or
 * `request aborted`, or `request errored` with `err` for a failure or a 5xx; the same lines
 * pino-http wrote. Each request gets its id (`genReqId`) and `req.log`, a logger bound to the
 * request, made when first used (`installRequestLog`): most requests never log anything but
 * their line, and making one per request was a measurable part of a small request's cost.
 * The request line itself holds only what the serializers above let through, so it skips the
 * logger's redaction paths (none of which it has).
 */
export function requestLogger(logger: Logger, genReqId: (req: never, res: never) => string) {
  installRequestLog();
  const lines = logger.child({}, { redact: { paths: [], censor: REDACTED }, serializers: { res: (res: LoggedResponse) => ({ statusCode: res.statusCode }) } });
  return (req: LoggedRequest, res: LoggedResponse, next: () => void): void => {
    const started = Date.now();
    req.id = genReqId(req as never, res as never);
    (req as { [BASE_LOGGER]?: Logger })[BASE_LOGGER] = logger;
    const done = (error?: unknown) => {
      res.removeListener('finish', done);
      res.removeListener('close', done);
      res.removeListener('error', done);
      const responseTime = Date.now() - started;
      const failure = error ?? res.err ?? (res.statusCode >= 500 ? new Error(`failed with status code ${res.statusCode}`) : undefined);
      if (failure !== undefined) lines.info({ req, res, err: failure, responseTime }, 'request errored');
      else lines.info({ req, res, responseTime }, !req.readableAborted && res.writableEnded ? 'request completed' : 'request aborted');
    };
    res.once('finish', done);
    res.once('close', done);
    res.once('error', done);
    next();
  };
}
