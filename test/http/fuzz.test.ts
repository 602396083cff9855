/**
 * A schema-driven fuzz of every operation of the API document (`GET /openapi.json`): for each,
 * bad requests built from its own parameters and body schema (wrong types, missing and unknown
 * fields, values at and past each bound, huge strings, deep nesting, broken percent-encoding
 * and UTF-8, wrong content types, garbage credentials), as a guest and signed in. Every answer
 * must be below 500, and every 4xx the Error body with its status (`test/setup/validate-responses.ts`
 * also checks each answer against the document). The sign-in provider's protocol endpoints,
 * which answer in OAuth's format, are fuzzed apart. Afterwards the server must still answer
 * `/health` and must have logged no unexpected error.
 *
 * Deterministic: one seeded generator picks every value, so a failure is replayed by running
 * the file again. Bounded: a few thousand requests, well under a minute.
 */
import { request } from 'node:http';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { appRouter } from '../../server/router.ts';
import { cookieHeader } from '../helpers/cookies.ts';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

type Json = Record<string, any>;

let server: TestServer;
let document: Json;
let superuser: { email: string };
let session: { cookie: string; token: string };

beforeAll(async () => {
  server = await startServer();
  document = (await (await fetch(`${server.url}/openapi.json`)).json()) as Json;
  superuser = await createActiveUser(server, { role: 'superuser', fullname: 'Fuzz Admin' });
  session = await signIn();
});
afterAll(() => server.close());

async function signIn(): Promise<{ cookie: string; token: string }> {
  const { client, token } = await loggedIn(server, superuser.email);
  return { cookie: cookieHeader(client), token };
}

/** Mulberry32: a small seeded generator, so every run sends the same requests. */
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (max: number) => Math.floor(next() * max),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T,
  };
}
const rng = generator(12);

// ---- values from schemas ------------------------------------------------------------------------

function resolve(schema: Json | undefined): Json {
  let current = schema ?? {};
  for (let i = 0; i < 10 && typeof current.$ref === 'string'; i++) {
    current = document.components.schemas[(current.$ref as string).split('/').pop() as string] as Json;
  }
  return current;
}

function typeOf(schema: Json): string | undefined {
  const s = resolve(schema);
  if (Array.isArray(s.type)) return s.type.find((t: string) => t !== 'null');
  if (s.type) return s.type as string;
  const alternative = (s.anyOf ?? s.oneOf) as Json[] | undefined;
  if (alternative) return alternative.map(typeOf).find((t) => t && t !== 'null');
  if (s.properties) return 'object';
  return undefined;
}

/** A value that should pass the schema, as far as a generator can tell. */
function sample(schema: Json | undefined, depth = 0): unknown {
  const s = resolve(schema);
  if ('const' in s) return s.const;
  if (Array.isArray(s.enum)) return s.enum[0];
  const alternative = (s.anyOf ?? s.oneOf) as Json[] | undefined;
  if (alternative) return sample(alternative.find((a) => resolve(a).type !== 'null') ?? alternative[0], depth);
  switch (typeOf(s)) {
    case 'string':
      if (s.format === 'email') return 'fuzz@example.org';
      if (s.format === 'uri') return 'https://client.example.org/callback';
      return 'a'.repeat(Math.max(1, Number(s.minLength ?? 1)));
    case 'integer':
    case 'number':
      return Number(s.minimum ?? 1);
    case 'boolean':
      return true;
    case 'array':
      return depth > 4 ? [] : Array.from({ length: Math.max(1, Number(s.minItems ?? 1)) }, () => sample(s.items as Json, depth + 1));
    case 'object': {
      if (depth > 4) return {};
      const out: Json = {};
      for (const name of (s.required ?? []) as string[]) out[name] = sample((s.properties ?? {})[name] as Json, depth + 1);
      return out;
    }
    default:
      return 'a';
  }
}

const HUGE = 'x'.repeat(200_000);
const nested = (n: number): unknown => {
  let value: unknown = { leaf: 1 };
  for (let i = 0; i < n; i++) value = i % 2 ? [value] : { a: value };
  return value;
};

/** Values that break the schema: at and past its bounds, of the wrong type, huge, odd. */
function badValues(schema: Json | undefined): unknown[] {
  const s = resolve(schema);
  const values: unknown[] = [null, 12345, true, [], {}, '', HUGE, '\u0000', 'ÿ\ud800', '../../etc/passwd', nested(80)];
  switch (typeOf(s)) {
    case 'string': {
      values.splice(1, 0, 7, ['a', 'b'], { value: 'a' });
      if (typeof s.minLength === 'number') values.push('a'.repeat(Math.max(0, s.minLength - 1)));
      if (typeof s.maxLength === 'number') values.push('a'.repeat(s.maxLength), 'a'.repeat(s.maxLength + 1));
      if (s.pattern || s.format) values.push(' <script>', 'a b', 'é');
      if (s.enum) values.push('not-one-of-them');
      break;
    }
    case 'integer':
    case 'number':
      values.push('1', 1.5, -1, 0, 2 ** 53, -(2 ** 53), 1e308, -1e308);
      if (typeof s.minimum === 'number') values.push(s.minimum - 1, s.minimum);
      if (typeof s.maximum === 'number') values.push(s.maximum, s.maximum + 1);
      break;
    case 'array':
      values.push('a', [null], Array.from({ length: Number(s.maxItems ?? 1000) + 1 }, () => sample(s.items as Json)));
      break;
    case 'object':
      values.push('a', [{}], { unknownProperty: 1 });
      break;
    default:
      break;
  }
  return values;
}

/** A value as a query or path parameter sends it. */
function asText(value: unknown): string {
  if (typeof value === 'string') return value;
  return JSON.stringify(value) ?? '';
}

// ---- sending ------------------------------------------------------------------------------------

type Identity = 'guest' | 'cookie' | 'bearer' | 'garbage-cookie' | 'garbage-bearer' | 'expired-bearer';

interface Sent {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer | FormData;
  as: Identity;
}

/** Looks like a session token but is not one: a JWT signed by nobody, long expired. */
const EXPIRED_JWT = [
  Buffer.from('{"alg":"HS256","typ":"JWT"}').toString('base64url'),
  Buffer.from('{"sub":"~Fuzz_Admin1","exp":1000000000,"iat":999999000}').toString('base64url'),
  'c2lnbmF0dXJl',
].join('.');

function credentials(as: Identity): Record<string, string> {
  switch (as) {
    case 'guest':
      return {};
    case 'cookie':
      return { cookie: session.cookie };
    case 'bearer':
      return { authorization: `Bearer ${session.token}` };
    case 'garbage-cookie':
      return { cookie: 'service.accessToken=%zz%E0; service.refreshToken=' + 'r'.repeat(5000) };
    case 'garbage-bearer':
      return { authorization: 'Bearer \u00ff\u00fe not a token' };
    case 'expired-bearer':
      return { authorization: `Bearer ${EXPIRED_JWT}` };
  }
}

const problems: string[] = [];
let sentCount = 0;

/** Sends one request and records every way its answer breaks the rules. */
async function send(request: Sent, check: (status: number, type: string, text: string) => string | null = errorBody): Promise<void> {
  const where = `${request.as} ${request.method} ${request.path.slice(0, 120)}`;
  sentCount++;
  try {
    const res = await fetch(server.url + request.path, {
      method: request.method,
      headers: { ...credentials(request.as), ...request.headers },
      body: request.body,
      redirect: 'manual',
    });
    const text = await res.text();
    if (res.status >= 500) problems.push(`${where} → ${res.status} ${text.slice(0, 200)}`);
    const problem = check(res.status, res.headers.get('content-type') ?? '', text);
    if (problem) problems.push(`${where} → ${res.status}: ${problem}`);
  } catch (error) {
    // validate-responses throws on an answer the API document does not describe.
    problems.push(`${where}: ${(error as Error).message.slice(0, 400)}`);
  }
}

/** A 4xx must be the Error body, with the status it was sent with. */
function errorBody(status: number, type: string, text: string): string | null {
  if (status < 400) return null;
  if (!/^application\/json/.test(type)) return `not JSON (${type})`;
  const body = JSON.parse(text) as Json;
  if (body.status !== status || typeof body.name !== 'string' || typeof body.message !== 'string') return `not an Error body: ${text.slice(0, 200)}`;
  return null;
}

/** An OAuth error: `{error, error_description?}`, or an empty 401 with WWW-Authenticate (userinfo). */
/**
 * The error check of an operation: the Error body; where the document says `x-error-format:
 * oauth`, OAuth's error, or the Error body the service answers before any route (an unknown
 * method, a malformed URL).
 */
function checkOf(operation: Operation): typeof errorBody {
  if (operation.op['x-error-format'] === 'page') return (status, type, text) => (pageError(status, type, text) === null ? null : errorBody(status, type, text));
  if (operation.op['x-error-format'] !== 'oauth') return errorBody;
  return (status, type, text) => (oauthError(status, type, text) === null ? null : errorBody(status, type, text));
}

/** A page's error (`x-error-format: page`): an HTML page with the request id to quote. */
function pageError(status: number, type: string, text: string): string | null {
  if (status < 400) return null;
  if (!/^text\/html/.test(type)) return `not a page (${type})`;
  return /request id/i.test(text) ? null : `a page without the request id: ${text.slice(0, 200)}`;
}

function oauthError(status: number, type: string, text: string): string | null {
  if (status < 400 || text === '') return null;
  if (!/^application\/json/.test(type)) return `not JSON (${type})`;
  const body = JSON.parse(text) as Json;
  return typeof body.error === 'string' ? null : `not an OAuth error: ${text.slice(0, 200)}`;
}

// ---- requests for one operation ----------------------------------------------------------------

interface Operation {
  method: string;
  template: string;
  op: Json;
}

function operationsOf(doc: Json): Operation[] {
  const out: Operation[] = [];
  for (const [template, item] of Object.entries(doc.paths as Json)) {
    for (const [method, op] of Object.entries(item as Json)) out.push({ method: method.toUpperCase(), template, op: op as Json });
  }
  // Operations that end or change the session come last, so the rest run signed in.
  const last = /logout|impersonate|refreshToken|moderate/;
  return out.sort((a, b) => Number(last.test(a.template)) - Number(last.test(b.template)));
}

/** Percent-encoding that never throws: a lone surrogate becomes U+FFFD, as a browser sends it. */
const percent = (value: string) => encodeURIComponent(value.toWellFormed());
const encode = (value: string) => percent(value).replace(/%2F/g, '/');

/** The path with its parameters filled: `values` by name, a sample for the others. */
function pathOf(operation: Operation, values: Record<string, string> = {}): string {
  return operation.template.replace(/\{(\w+)\}/g, (_m, name: string) => values[name] ?? (name === 'venueId' ? 'Fuzz.org/2027' : 'fuzz-id'));
}

function query(params: Array<[string, string]>, raw = ''): string {
  const text = params.map(([k, v]) => `${percent(k)}=${percent(v)}`).join('&');
  const all = [text, raw].filter(Boolean).join('&');
  return all ? `?${all}` : '';
}

/**
 * Every bad request for one operation, as one identity. They differ by identity only in `as`
 * (and the other methods a guest and a session try), so they are made once per operation, for
 * the one asked for last: made anew for each of six identities, with bodies of up to a megabyte
 * among them, making them took a third of the fuzz's time.
 */
let made: { operation: Operation; requests: Unsent[] } | undefined;
function requestsFor(operation: Operation, as: Identity): Sent[] {
  if (made?.operation !== operation) made = { operation, requests: badRequestsOf(operation) };
  const requests: Sent[] = made.requests.map((request) => ({ ...request, as }));
  // Other methods on the same path: a 404 Error body (or the operation, if it is documented).
  if (as === 'guest' || as === 'cookie') {
    for (const other of ['PATCH', 'OPTIONS', 'PROPFIND']) requests.push({ method: other, path: pathOf(operation), as });
  }
  return requests;
}

type Unsent = Omit<Sent, 'as'>;

function badRequestsOf(operation: Operation): Unsent[] {
  const { method, op } = operation;
  const parameters = (op.parameters ?? []) as Json[];
  const pathParams = parameters.filter((p) => p.in === 'path');
  const queryParams = parameters.filter((p) => p.in === 'query');
  const baseQuery: Array<[string, string]> = queryParams.filter((p) => p.required).map((p) => [p.name as string, asText(sample(p.schema as Json))]);
  const requests: Unsent[] = [];
  const at = (path: string, extra: Partial<Unsent> = {}): Unsent => ({ method, path, ...extra });

  // Path parameters: broken percent-encoding and UTF-8, bounds, huge, traversal.
  for (const p of pathParams) {
    const raw = ['%zz', '%E0%A4%A', '%', '%C3%28', '%FF%FE', '%00', 'a'.repeat(5000), '..%2F..%2Fetc%2Fpasswd', '%F0%9F%98%80', ' ', '~'];
    for (const bad of badValues(p.schema as Json).filter((v) => typeof v === 'string' && v.length < 6000) as string[]) raw.push(encode(bad));
    for (const value of raw) requests.push(at(pathOf(operation, { [p.name as string]: value }) + query(baseQuery)));
  }

  // Query parameters: missing, unknown, repeated, each bad value, broken encodings.
  if (queryParams.length > 0) {
    requests.push(at(pathOf(operation)));
    requests.push(at(pathOf(operation) + query([...baseQuery, ['unknownParameter', 'x']])));
    requests.push(at(pathOf(operation) + query(baseQuery, '%zz=%E0%A4%A&a=%FF&=&&b')));
    for (const p of queryParams) {
      const name = p.name as string;
      const others = baseQuery.filter(([k]) => k !== name);
      requests.push(at(pathOf(operation) + query([...baseQuery, [name, 'a'], [name, 'b']])));
      requests.push(at(pathOf(operation) + query(others, `${encodeURIComponent(name)}=%zz`)));
      for (const bad of badValues(p.schema as Json)) {
        const text = asText(bad);
        if (text.length > 8000) continue;
        requests.push(at(pathOf(operation) + query([...others, [name, text]])));
      }
      requests.push(at(pathOf(operation) + query([...others, [name, 'q'.repeat(12_000)]])));
    }
  }

  // Header parameters (a human-verification token, a byte range, an ETag): odd and huge values.
  for (const p of parameters.filter((q) => q.in === 'header')) {
    const odd = ['', 'x'.repeat(8000), 'bytes=abc', 'bytes=99999999999-', 'bytes=5-1', 'bytes=-0', Array.from({ length: 500 }, (_, i) => `${i}-${i}`).join(','), '"etag"', '*', 'W/"x", "y"'];
    for (const value of odd) requests.push(at(pathOf(operation) + query(baseQuery), { headers: { [p.name as string]: value } }));
  }
  // Conditions a file download may be asked (the document lists Range and If-None-Match only).
  if (parameters.some((q) => q.name === 'Range')) {
    const conditions: Array<Record<string, string>> = [{ 'if-match': '"nope"' }, { 'if-unmodified-since': 'Mon, 01 Jan 1990 00:00:00 GMT' }, { 'if-modified-since': 'garbage' }, { 'if-range': '"x"', range: 'bytes=0-1' }];
    for (const headers of conditions) {
      requests.push(at(pathOf(operation) + query(baseQuery), { headers }));
    }
  }

  // A JSON body: wrong types, missing and unknown properties, each bad value, nesting, encodings.
  const content = op.requestBody?.content as Json | undefined;
  const jsonSchema = content?.['application/json']?.schema as Json | undefined;
  const json = { 'content-type': 'application/json' };
  if (jsonSchema) {
    const path = pathOf(operation) + query(baseQuery);
    const schema = resolve(jsonSchema);
    const base = sample(schema) as Json;
    const body = (value: unknown) => at(path, { headers: json, body: JSON.stringify(value) });
    requests.push(body(base));
    for (const wrong of [null, [], 'a', 1, true, [base]]) requests.push(body(wrong));
    requests.push(body({ ...base, unknownProperty: 'x' }));
    requests.push(body(nested(70)));
    for (const name of (schema.required ?? []) as string[]) {
      const { [name]: _gone, ...rest } = base;
      requests.push(body(rest));
    }
    for (const [name, property] of Object.entries((schema.properties ?? {}) as Json)) {
      for (const bad of badValues(property as Json)) requests.push(body({ ...base, [name]: bad }));
    }
    requests.push(at(path, { headers: json, body: '{"a":' }));
    requests.push(at(path, { headers: json, body: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]) }));
    requests.push(at(path, { headers: json, body: '[' .repeat(10_000) + ']'.repeat(10_000) }));
    requests.push(at(path, { headers: json, body: JSON.stringify({ ...base, pad: 'p'.repeat(1_100_000) }) }));
    requests.push(at(path, { headers: { ...json, 'content-encoding': 'gzip' }, body: Buffer.from('not gzip') }));
    requests.push(at(path, { headers: { ...json, 'content-encoding': 'gzip' }, body: gzipSync(JSON.stringify(base)) }));
    requests.push(at(path, { headers: { ...json, 'content-encoding': 'x-unknown' }, body: '{}' }));
    requests.push(at(path, { headers: { 'content-type': 'application/json; charset=ebcdic' }, body: '{}' }));
    requests.push(at(path, { headers: { 'content-type': 'text/plain' }, body: JSON.stringify(base) }));
    requests.push(at(path, { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: Array.from({ length: 60 }, (_, i) => `p${i}=v`).join('&') }));
    requests.push(at(path, { headers: { 'content-type': 'multipart/form-data; boundary=x' }, body: '--x\r\nbroken' }));
  }

  // A multipart body (uploads): wrong content types, broken parts, bad fields.
  const multipart = content?.['multipart/form-data']?.schema as Json | undefined;
  if (multipart) {
    const path = pathOf(operation);
    const fields = Object.fromEntries(((multipart.required ?? []) as string[]).filter((n) => n !== 'file').map((n) => [n, asText(sample(multipart.properties[n] as Json))]));
    const form = (entries: Record<string, string>, file?: { name: string; data: string }) => {
      const data = new FormData();
      for (const [k, v] of Object.entries(entries)) data.append(k, v);
      if (file) data.append(file.name, new Blob([file.data]), 'f.pdf');
      return data;
    };
    requests.push(at(path, { body: form(fields, { name: 'file', data: '%PDF-1.7\n' }) }));
    requests.push(at(path, { body: form(fields) }));
    requests.push(at(path, { body: form({ ...fields, unknownField: 'x' }, { name: 'file', data: '%PDF' }) }));
    requests.push(at(path, { body: form(fields, { name: 'other', data: '%PDF' }) }));
    for (const [name, property] of Object.entries((multipart.properties ?? {}) as Json)) {
      if (name === 'file') continue;
      for (const bad of badValues(property as Json).slice(0, 14)) {
        const text = asText(bad);
        if (text.length < 3000) requests.push(at(path, { body: form({ ...fields, [name]: text }, { name: 'file', data: '%PDF' }) }));
      }
    }
    requests.push(at(path, { headers: { 'content-type': 'application/json' }, body: '{}' }));
    requests.push(at(path, { headers: { 'content-type': 'multipart/form-data' }, body: 'x' }));
    requests.push(at(path, { headers: { 'content-type': 'multipart/form-data; boundary=b' }, body: '--b\r\nno header end' }));
    requests.push(at(path, { headers: { 'content-type': 'multipart/form-data; boundary=b', 'content-encoding': 'gzip' }, body: 'garbage' }));
  }
  return requests;
}

// ---- the fuzz -----------------------------------------------------------------------------------

/** How many of an operation's bad requests each identity sends (a seeded pick): the bound on the run's length. */
const PER_OPERATION = 32;
/** Fewer where a well-formed request hashes a password (a third of a second each). */
const HASHING = /^\/(login|register|reset\/|activate\/|resettable$|user\/confirm)/;

beforeEach(() => {
  problems.length = 0;
});

describe('a schema-driven fuzz of every operation', () => {
  // About 2 500 requests: 30-45 s on a quiet 2-core machine; beside another whole test run (four
  // workers on two cores) it once took more than 240 s.
  it('gets no 5xx, and an Error body with its status for every 4xx, as a guest and signed in', { timeout: 480_000 }, async () => {
    const operations = operationsOf(document);
    expect(operations.length).toBeGreaterThan(30);
    const timing: Array<[number, string]> = [];
    for (const operation of operations) {
      const opStart = Date.now();
      // Still signed in? An earlier operation (logout, impersonation) may have ended the session.
      const me = await fetch(`${server.url}/profiles`, { headers: { cookie: session.cookie } });
      if (me.status !== 200) session = await signIn();
      for (const as of ['guest', 'cookie'] as const) {
        const requests = requestsFor(operation, as);
        // A seeded shuffle, then a bound per operation: deterministic, and under a minute in all.
        for (let i = requests.length - 1; i > 0; i--) {
          const j = rng.int(i + 1);
          [requests[i], requests[j]] = [requests[j] as Sent, requests[i] as Sent];
        }
        for (const request of requests.slice(0, HASHING.test(operation.template) ? 10 : PER_OPERATION)) await send(request, checkOf(operation));
      }
      for (const as of ['bearer', 'garbage-cookie', 'garbage-bearer', 'expired-bearer'] as const) {
        const [first] = requestsFor(operation, as);
        if (first) await send(first, checkOf(operation));
        await send({ method: operation.method, path: pathOf(operation), as }, checkOf(operation));
      }
      timing.push([Date.now() - opStart, `${operation.method} ${operation.template}`]);
    }
    if (process.env.FUZZ_DEBUG) console.log(timing.sort((a, b) => b[0] - a[0]).slice(0, 15), sentCount);
    expect(problems).toEqual([]);
    expect(sentCount).toBeGreaterThan(1200);
  });

  it('leaves the server answering, with no unexpected error in its log', async () => {
    const health = await new Client(server.url).get('/health');
    expect(health.body).toEqual({ status: 'ok', database: 'ok' });
    const unexpected = server.logs.filter((line) => (JSON.parse(line) as { level: number }).level >= 50);
    expect(unexpected.map((line) => line.slice(0, 300))).toEqual([]);
  });
});

describe('a fuzz of the sign-in provider’s protocol endpoints', () => {
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  const tokenForms = [
    '',
    'grant_type=authorization_code',
    'grant_type=authorization_code&code=x&redirect_uri=http%3A%2F%2Fx&client_id=nope&code_verifier=short',
    `grant_type=authorization_code&code=${'c'.repeat(5000)}&code_verifier=${'v'.repeat(200)}&client_id=a&client_id=b`,
    'grant_type=refresh_token&refresh_token=%zz',
    'grant_type=refresh_token&refresh_token=' + 'r'.repeat(60_000),
    'grant_type=password&username=a&password=b',
    'grant_type=client_credentials&client_id=x&client_secret=y',
    'grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code&device_code=x&client_id=nope',
    'grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code&device_code=a&device_code=b',
    'client_id=nope&scope=openid%20profile',
    'scope=' + 's'.repeat(5000),
    'grant_type[]=x&code[a]=1',
    '%zz=%E0%A4%A&grant_type=%FF',
    Array.from({ length: 60 }, (_, i) => `p${i}=v`).join('&'),
    'grant_type=' + 'g'.repeat(70_000),
  ];

  it('POST /oidc/token, /oidc/par, /oidc/device/auth, /oidc/revoke, /oidc/introspect and /oidc/userinfo answer OAuth errors, never a 5xx', async () => {
    for (const path of ['/oidc/token', '/oidc/par', '/oidc/device/auth', '/oidc/revoke', '/oidc/introspect', '/oidc/userinfo']) {
      for (const body of tokenForms) {
        for (const as of ['guest', 'garbage-bearer', 'expired-bearer'] as const) await send({ method: 'POST', path, headers: form, body, as }, oauthError);
      }
      await send({ method: 'POST', path, headers: { 'content-type': 'application/json' }, body: '{"grant_type":"authorization_code"}', as: 'guest' }, oauthError);
      await send({ method: 'POST', path, headers: { ...form, 'content-encoding': 'gzip' }, body: 'garbage', as: 'guest' }, oauthError);
      await send({ method: 'POST', path, headers: { 'content-type': 'application/x-www-form-urlencoded; charset=ebcdic' }, body: 'a=b', as: 'guest' }, oauthError);
      await send({ method: 'POST', path, headers: { 'content-type': 'multipart/form-data; boundary=x' }, body: '--x\r\nbroken', as: 'guest' }, oauthError);
      await send({ method: 'POST', path, headers: form, body: 'access_token=x', as: 'garbage-bearer' }, oauthError);
    }
    for (const as of ['guest', 'bearer', 'garbage-bearer', 'expired-bearer'] as const) await send({ method: 'GET', path: '/oidc/userinfo', as }, oauthError);
    expect(problems).toEqual([]);
  });

  it('GET and POST /oidc/authorize answer error pages or redirects, never a 5xx', async () => {
    const params = [
      '',
      'client_id=nope',
      'client_id=%zz&redirect_uri=%E0%A4%A',
      'client_id=a&client_id=b&response_type=code&response_type=token',
      'response_type=code&client_id=x&redirect_uri=javascript%3Aalert(1)&scope=openid&code_challenge=' + 'c'.repeat(500),
      'scope=' + 'openid '.repeat(2000),
      'request=' + EXPIRED_JWT,
      'prompt=none&max_age=-1&client_id=x',
      'max_age=1e309&client_id=x',
      'interaction=%00',
      'client_id=x&request_uri=urn%3Aietf%3Aparams%3Aoauth%3Arequest_uri%3Aabc',
      'client_id=a&request_uri=x&request_uri=y',
      'request_uri=' + 'u'.repeat(5000),
    ];
    for (const p of params) {
      for (const as of ['guest', 'cookie'] as const) {
        await send({ method: 'GET', path: `/oidc/authorize?${p}`, as }, () => null);
        await send({ method: 'POST', path: '/oidc/authorize', headers: form, body: p, as }, () => null);
      }
      await send({ method: 'GET', path: `/oidc/login?interaction=${p.slice(0, 100)}`, as: 'guest' }, () => null);
      await send({ method: 'POST', path: '/oidc/login', headers: form, body: `${p}&interaction=x&csrf=y&email=a&password=b`, as: 'guest' }, () => null);
      await send({ method: 'POST', path: '/oidc/consent', headers: form, body: `${p}&interaction=x&csrf=y&decision=allow`, as: 'cookie' }, () => null);
    }
    expect(problems).toEqual([]);
  });
});

describe('a fuzz of every tRPC procedure', () => {
  /** A tRPC error carries the Error body in `error.data.error`; a request refused before tRPC, the Error body itself. */
  function trpcError(status: number, type: string, text: string): string | null {
    if (status < 400) return null;
    if (!/^application\/json/.test(type)) return `not JSON (${type})`;
    const body = JSON.parse(text) as Json;
    const error = (Array.isArray(body) ? body[0] : body)?.error?.data?.error ?? body;
    if (error?.status !== status || typeof error?.name !== 'string' || typeof error?.message !== 'string') return `no Error body with status ${status}: ${text.slice(0, 200)}`;
    return null;
  }

  // Every procedure with many bad inputs: 15–25 s on a quiet machine, more on a loaded one.
  it('answers bad inputs to every procedure, queried or mutated, with a 4xx Error body, never a 5xx', { timeout: 150_000 }, async () => {
    const procedures = Object.keys(appRouter._def.procedures as Record<string, unknown>).filter((name) => !/logout|impersonate|refreshToken/i.test(name));
    expect(procedures.length).toBeGreaterThan(30);
    const inputs = ['', 'null', '"text"', '12', '[]', '{"unknownProperty":1}', JSON.stringify(nested(70)), JSON.stringify({ id: HUGE }), '{"a":', '\u00ff'];
    for (const name of procedures) {
      for (const as of ['guest', 'cookie'] as const) {
        for (const input of inputs) {
          await send({ method: 'POST', path: `/trpc/${name}`, headers: { 'content-type': 'application/json' }, body: input, as }, trpcError);
        }
        for (const input of ['%zz', encodeURIComponent('{"id":[1]}'), encodeURIComponent(JSON.stringify(nested(70)))]) {
          await send({ method: 'GET', path: `/trpc/${name}?input=${input}`, as }, trpcError);
        }
        await send({ method: 'GET', path: `/trpc/${name},${name}?batch=1&input=%7B%7D`, as }, trpcError);
      }
    }
    await send({ method: 'GET', path: `/trpc/${procedures.slice(0, 20).join(',')}?batch=1`, as: 'guest' }, trpcError);
    await send({ method: 'GET', path: '/trpc/no.such.procedure', as: 'guest' }, trpcError);
    expect(problems).toEqual([]);
  });
});

describe('requests the HTTP parser itself refuses', () => {
  it('a URL or headers past the size limit answers an Error body', async () => {
    const oversized: Array<[string, Record<string, string>]> = [
      [`/profiles?id=${'a'.repeat(20_000)}`, {}],
      ['/health', { 'x-padding': 'p'.repeat(20_000) }],
    ];
    for (const [path, headers] of oversized) {
      const res = await fetch(server.url + path, { headers });
      expect(res.status).toBe(431);
      expect(await res.json()).toEqual({ status: 431, name: 'BadRequestError', message: 'The request line and headers are too large', details: { reqId: expect.any(String) } });
      // The same as a HEAD: the answer's headers, and no body after them (RFC 9110 §9.3.2).
      const head = await new Promise<{ status?: number; length?: string; body: string }>((resolve, reject) => {
        const req = request(server.url + path, { method: 'HEAD', headers }, (answer) => {
          let body = '';
          answer.on('data', (chunk: Buffer) => (body += chunk.toString()));
          answer.on('end', () => resolve({ status: answer.statusCode, length: answer.headers['content-length'], body }));
        });
        req.on('error', reject);
        req.end();
      });
      expect(head).toEqual({ status: 431, length: expect.stringMatching(/^\d+$/), body: '' });
    }
  });

  it('a malformed request line or header answers an Error body, and the server goes on', async () => {
    const { port } = new URL(server.url);
    const raw = (text: string) =>
      new Promise<string>((resolve) => {
        const socket = connect(Number(port), '127.0.0.1', () => socket.end(text));
        let answer = '';
        socket.on('data', (data: Buffer) => (answer += data.toString('latin1')));
        socket.on('error', () => resolve(answer));
        socket.on('close', () => resolve(answer));
      });
    const malformed = [
      'GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
      'POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
      'POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      'GET /health HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n',
      'GET /he alth HTTP/1.1\r\nHost: x\r\n\r\n',
      'NOT-A-METHOD /health HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET /health HTTP/9.9\r\nHost: x\r\n\r\n',
    ];
    for (const text of malformed) {
      const answer = await raw(text);
      const status = Number(answer.slice(9, 12));
      expect(status, JSON.stringify(text)).toBeGreaterThanOrEqual(400);
      expect(status).toBeLessThan(500);
      expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({ status, name: expect.any(String), message: expect.any(String) });
    }
    expect(await (await fetch(`${server.url}/health`)).json()).toEqual({ status: 'ok', database: 'ok' });
  });
});
