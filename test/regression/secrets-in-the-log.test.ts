/**
 * The attack (on the log, which more people read than should see passwords): an OpenID Connect
 * form with more than 50 parameters made the form parser fail, and the 500 that followed logged
 * the error object whole, with its `body` property: the raw form, password, code and
 * code_verifier included. And `GET /ACTIVATABLE/<token>` (any letter case, which Express routes
 * alike) logged the token, because the redaction of paths matched only lower case.
 *
 * The fix: paths are redacted whatever their letter case or percent-encoding, query parameters
 * by names that say they carry secrets, errors are logged through a serializer that keeps only
 * their class, scrubbed message and stack and a few codes (never `body`), and the body parsers'
 * errors are client errors (4xx) that are not logged at all.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, redactUrl, serializeError } from '../../server/logger.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { Writable } from 'node:stream';

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

const secret = (label: string) => `${label}${randomBytes(12).toString('hex')}`;

function everyLogLine(): string {
  return server.logs.join('\n');
}

describe('an OpenID Connect form too many parameters long', () => {
  const paths = ['/oidc/token', '/oidc/login', '/oidc/consent', '/oidc/authorize', '/oidc/revoke', '/oidc/userinfo'];
  it.each(paths)('to %s is a 4xx, and logs none of its values', async (path) => {
    const secrets = { password: secret('pw'), code: secret('code'), code_verifier: secret('verifier'), client_secret: secret('cs') };
    const form = new URLSearchParams(secrets);
    for (let i = 0; i < 60; i++) form.append(`p${i}`, secret('filler'));
    const res = await fetch(server.url + path, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString() });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    if (['/oidc/token', '/oidc/revoke', '/oidc/userinfo'].includes(path)) {
      expect(await res.json()).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
    }
    const log = everyLogLine();
    for (const value of Object.values(secrets)) expect(log).not.toContain(value);
  });
});

describe('a one-time token in the path', () => {
  it('is never logged, whatever the letter case, percent-encoding or shape of the path', async () => {
    const sent: string[] = [];
    const shapes = [
      (t: string) => ['GET', `/ACTIVATABLE/${t}`],
      (t: string) => ['GET', `/Activatable/${t}/`],
      (t: string) => ['GET', `/%61ctivatable/${t}`],
      (t: string) => ['GET', `/activatable/${t}%E0%A4%A`],
      (t: string) => ['GET', `/RESETTABLE/${t}`],
      (t: string) => ['PUT', `/Reset/${t}`],
      (t: string) => ['GET', `/reset/${t}`],
      (t: string) => ['PUT', `/ACTIVATE/${t}`],
      (t: string) => ['PUT', `/ActivateLink/${t}`],
      (t: string) => ['POST', `/User/Confirm/${t}`],
      (t: string) => ['POST', `/user//confirm/${t}`],
      (t: string) => ['GET', `/nowhere?TOKEN=${t}`],
      (t: string) => ['GET', `/oidc/authorize?Code_Verifier=${t}&client_secret=${t}`],
      (t: string) => ['GET', `/TRPC/accounts.activatable?input=${encodeURIComponent(JSON.stringify({ token: t }))}`],
    ];
    for (const shape of shapes) {
      const token = secret('tok');
      sent.push(token);
      const [method, path] = shape(token) as [string, string];
      const res = await fetch(server.url + path, { method, headers: { 'content-type': 'application/json' }, body: method === 'GET' ? undefined : '{}' });
      expect(res.status, `${method} ${path}`).toBeLessThan(500);
    }
    const log = everyLogLine();
    for (const token of sent) expect(log).not.toContain(token);
    expect(log).toContain('/ACTIVATABLE/[redacted]');
  });
});

describe('the log serializers', () => {
  it('redact every route shape of a token', () => {
    expect(redactUrl('/ACTIVATABLE/abc')).toBe('/ACTIVATABLE/[redacted]');
    expect(redactUrl('/Reset/abc/def')).toBe('/Reset/[redacted]');
    expect(redactUrl('/%61ctivatable/abc')).toBe('/%61ctivatable/[redacted]');
    expect(redactUrl('/user//Confirm/abc')).toBe('/user//Confirm/[redacted]');
    expect(redactUrl('/activatable')).toBe('/activatable');
    expect(redactUrl('/x?Access_Token=a&id=b')).toBe('/x?Access_Token=%5Bredacted%5D&id=b');
    expect(redactUrl('/account/confirm?email=a%40b.org')).toBe('/account/confirm?email=%5Bredacted%5D');
  });

  it('log an error without what it carries of the request', () => {
    const password = secret('pw');
    const parserError = Object.assign(new Error('too many parameters'), { type: 'parameters.too.many', status: 413, body: `password=${password}`, input: { password } });
    const knexError = Object.assign(new Error(`insert into "sessions" ("email", "hash") values ('a@b.org', '${password}') - SQLITE_BUSY: database is locked`), {
      code: 'SQLITE_BUSY',
      errno: 5,
    });
    const decodeError = Object.assign(new URIError(`Failed to decode param '${password}%zz'`), { status: 400 });
    const wrapped = new Error('outer', { cause: knexError });
    for (const error of [parserError, knexError, decodeError, wrapped]) {
      const text = JSON.stringify(serializeError(error));
      expect(text).not.toContain(password);
      expect(text).not.toContain('a@b.org');
    }
    expect(serializeError(parserError)).toMatchObject({ type: 'Error', message: 'too many parameters', status: 413, errorType: 'parameters.too.many' });
    expect(serializeError(knexError)).toMatchObject({ code: 'SQLITE_BUSY', errno: 5 });
    expect(serializeError(wrapped)).toMatchObject({ message: 'outer', cause: { code: 'SQLITE_BUSY' } });
    expect(serializeError(`a string with ${password}`)).toEqual({ type: 'string', message: '(not an Error)' });
  });

  it('a logger given an error with a body, a deep input or a cycle writes one line without them', () => {
    const lines: string[] = [];
    const logger = createLogger('info', new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(chunk.toString()), done()) }));
    let deep: unknown = [];
    for (let i = 0; i < 20_000; i++) deep = [deep];
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const password = secret('pw');
    logger.error({ err: Object.assign(new Error('boom'), { body: password, input: deep, cyclic }) }, 'unexpected error');
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(password);
    expect(JSON.parse(lines[0] as string)).toMatchObject({ msg: 'unexpected error', err: { type: 'Error', message: 'boom' } });
  });
});
