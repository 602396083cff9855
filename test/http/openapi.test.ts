import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument, openApiPath } from '../../server/http/openapi.ts';
import { routes } from '../../server/http/routes.ts';
import { isOtherProtocol, problemsOf } from '../helpers/api-document.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let document: Record<string, any>;

beforeAll(async () => {
  server = await startServer({ DEV_BASE_URL: 'http://localhost:5173' });
  document = (await (await fetch(`${server.url}/openapi.json`)).json()) as Record<string, any>;
});
afterAll(() => server.close());

interface Layer {
  route?: { path: string | string[]; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
}

/** Every method and path the running app has registered, read from Express's own router. */
function registeredRoutes(stack: Layer[]): string[] {
  return stack.flatMap((layer) => {
    const route = layer.route;
    if (route) {
      const paths = Array.isArray(route.path) ? route.path : [route.path];
      const methods = Object.keys(route.methods).filter((m) => m !== '_all');
      return paths.flatMap((path) => methods.map((method) => `${method.toUpperCase()} ${openApiPath(path)}`));
    }
    return layer.handle?.stack ? registeredRoutes(layer.handle.stack) : [];
  });
}

function documentedRoutes(doc: Record<string, any>): string[] {
  return Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
    Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
  );
}

describe('the API document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(document);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('is the one built from the code, with version 1.0.0 and the production and development servers', () => {
    expect(document).toEqual(buildOpenApiDocument(server.config));
    expect(document.info.version).toBe('1.0.0');
    expect(document.servers).toEqual([
      { url: server.url, description: 'production' },
      { url: 'http://localhost:5173', description: 'development' },
    ]);
  });

  it('has the session cookie service.accessToken as the default security scheme', () => {
    expect(document.security[0]).toEqual({ accessTokenCookie: [] });
    expect(document.components.securitySchemes.accessTokenCookie).toMatchObject({ type: 'apiKey', in: 'cookie', name: 'service.accessToken' });
    // A route that needs no session says so; one that needs it inherits the default.
    expect(document.paths['/health'].get.security).toEqual([]);
    expect(document.paths['/profiles'].get.security).toBeUndefined();
  });

  it('lists every route the app serves, and serves every route it lists', () => {
    const all = registeredRoutes((server.service.app as unknown as { router: { stack: Layer[] } }).router.stack);
    const ours = (route: string) => !isOtherProtocol(route.split(' ')[1] ?? '');
    const listed = documentedRoutes(document);
    expect(new Set(listed.filter(ours))).toEqual(new Set(all.filter(ours)));
    expect(listed).toHaveLength(new Set(listed).size);
    // The provider's protocol endpoints it describes (token, introspection, revocation, UserInfo) are served too.
    for (const route of listed.filter((r) => !ours(r))) expect(all).toContain(route);
  });

  it('has each procedure route of the route table', () => {
    for (const route of routes.filter((entry) => entry.kind === 'procedure')) expect(document.paths[openApiPath(route.path)]?.[route.method], `${route.method} ${route.path}`).toBeDefined();
  });

  it('names exactly the variables of its path template as each operation’s path parameters', () => {
    for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, { parameters?: { in: string; name: string; required: boolean }[] }>>)) {
      const variables = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
      for (const [method, operation] of Object.entries(item)) {
        const inPath = (operation.parameters ?? []).filter((p) => p.in === 'path');
        expect(inPath.map((p) => p.name).sort(), `${method} ${path}`).toEqual(variables);
        expect(inPath.every((p) => p.required)).toBe(true);
      }
    }
  });

  it('describes bodies, query parameters and answers from the schemas that check them', () => {
    const login = document.paths['/login'].post;
    expect(login.requestBody.content['application/json'].schema).toMatchObject({
      type: 'object',
      required: ['id', 'password'],
      additionalProperties: false,
    });
    // Shared resources are components the operations refer to.
    // A session, or (a second factor on) the second step.
    expect(login.responses['200'].content['application/json'].schema).toEqual({
      anyOf: [{ $ref: '#/components/schemas/SessionResult' }, { $ref: '#/components/schemas/MfaPendingResult' }],
    });
    expect(document.components.schemas.SessionResult.required).toEqual(['token', 'user']);
    expect(document.components.schemas.Error.properties.name.enum).toContain('TokenExpiredError');
    const tilde = document.paths['/tildeusername'].get.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`);
    expect(tilde).toEqual(['query:first', 'query:middle', 'query:last', 'query:fullname']);
    // A path parameter is not also asked for in the body.
    const activate = document.paths['/activate/{token}'].put;
    expect(Object.keys(activate.requestBody.content['application/json'].schema.properties)).toEqual(['content']);
  });

  it('describes the uploads as multipart bodies with the file and every field', () => {
    const chunk = document.paths['/attachment/chunk'].put.requestBody.content['multipart/form-data'].schema;
    expect(chunk.required.sort()).toEqual(['chunkIndex', 'clientUploadId', 'file', 'invitationId', 'name', 'totalChunks']);
    expect(chunk.properties.file).toEqual({ type: 'string', contentMediaType: 'application/octet-stream' });
    expect(chunk.properties.chunkIndex).toMatchObject({ type: 'integer', minimum: 0 });
    expect(chunk.properties.totalChunks).toMatchObject({ type: 'integer', minimum: 1, maximum: 10_000 });
    const headers = document.paths['/attachment/chunk'].put.parameters.filter((p: { in: string }) => p.in === 'header');
    expect(headers.map((p: { name: string }) => p.name)).toEqual(['cf-turnstile-token']);
    expect(document.paths['/attachment'].put.requestBody.content['multipart/form-data'].schema.required.sort()).toEqual([
      'file',
      'invitationId',
      'name',
    ]);
  });

  it('gives every error status the Error body', () => {
    for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, any>>)) {
      for (const [method, operation] of Object.entries(item)) {
        for (const [status, response] of Object.entries(operation.responses as Record<string, any>)) {
          if (Number(status) < 400) continue;
          // The registration endpoints (RFC 7591) answer OAuth's errors (or, before any route, the Error body), and say so.
          const oauth = { anyOf: [{ type: 'object', required: ['error'], properties: { error: { type: 'string' }, error_description: { type: 'string' } } }, { $ref: '#/components/schemas/Error' }] };
          const expected = operation['x-error-format'] === 'oauth' ? oauth : { $ref: '#/components/schemas/Error' };
          expect(response.content['application/json'].schema, `${method} ${path} ${status}`).toEqual(expected);
          // A page a person's browser is sent (signing out) says its errors as a page, and says so.
          if (operation['x-error-format'] === 'page') expect(response.content['text/html'].schema, `${method} ${path} ${status}`).toEqual({ type: 'string' });
          else expect(Object.keys(response.content), `${method} ${path} ${status}`).toEqual(['application/json']);
        }
      }
    }
    expect(document.components.schemas.Error.required.sort()).toEqual(['message', 'name', 'status']);
  });
});

describe('the answer check every HTTP test runs', () => {
  it('refuses a status, a body or a path the document does not have', () => {
    const answer = { method: 'GET', path: '/tildeusername', contentType: 'application/json; charset=utf-8' };
    expect(problemsOf({ ...answer, status: 200, text: '{"username":"~Ada_Lovelace1"}' })).toEqual([]);
    expect(problemsOf({ ...answer, status: 200, text: '{"user":"~Ada_Lovelace1"}' }).join()).toMatch(/must have required property 'username'/);
    expect(problemsOf({ ...answer, status: 418, text: '{}' }).join()).toMatch(/status not in the API document/);
    expect(problemsOf({ ...answer, path: '/nowhere', status: 200, text: '{}' }).join()).toMatch(/not in the API document/);
    const notFound = '{"name":"NotFoundError","message":"Route not found","status":404}';
    expect(problemsOf({ ...answer, path: '/nowhere', status: 404, text: notFound })).toEqual([]);
  });

  it('is installed around fetch, so an undocumented answer fails the test that got it', async () => {
    // A HEAD request is not in the document: the check refuses the answer.
    await expect(fetch(`${server.url}/tildeusername`, { method: 'HEAD' })).rejects.toThrow(/does not match the API document/);
  });
});

describe('the reference page', () => {
  it('sends /docs/ to /docs, where its relative links work', async () => {
    const res = await fetch(`${server.url}/docs/`, { redirect: 'manual' });
    expect(res.status).toBe(301);
    expect(new URL(res.headers.get('location') ?? '', `${server.url}/docs/`).pathname).toBe('/docs');
  });

  it('does not ask browsers to upgrade to https a service that is served over http', async () => {
    const res = await fetch(`${server.url}/docs`);
    expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
    expect(res.headers.get('content-security-policy')).not.toMatch(/upgrade-insecure-requests/);
  });

  it('serves the viewer from the package, not a CDN', async () => {
    const page = await (await fetch(`${server.url}/docs`)).text();
    expect(page).not.toMatch(/https?:\/\//);
    const script = await fetch(`${server.url}/docs/swagger-ui-bundle.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/javascript/);
  });

  it('sends its texts with an ETag made once, answering 304 to a browser that names it', async () => {
    for (const path of ['/openapi.json', '/docs', '/docs/init.js', '/docs/swagger-ui.css']) {
      const first = await fetch(`${server.url}${path}`);
      expect(first.status, path).toBe(200);
      const etag = first.headers.get('etag');
      expect(etag, path).toMatch(/^"[\w-]{27}"$/);
      const again = await fetch(`${server.url}${path}`, { headers: { 'if-none-match': etag!, 'cache-control': 'max-age=0' } });
      expect(again.status, path).toBe(304);
    }
    // Files of installed packages, sent from disk: the weak ETag of their size and time, which
    // decides over the date (an older file, after a rollback, is not taken as the same).
    for (const path of ['/docs/swagger-ui-bundle.js', '/webauthn/browser.js']) {
      const script = await fetch(`${server.url}${path}`);
      const etag = script.headers.get('etag');
      expect(etag, path).toMatch(/^W\/"[0-9a-f]+-[0-9a-f]+"$/);
      const modified = script.headers.get('last-modified')!;
      const again = await fetch(`${server.url}${path}`, { headers: { 'if-none-match': etag!, 'cache-control': 'max-age=0' } });
      expect(again.status, path).toBe(304);
      const other = await fetch(`${server.url}${path}`, { headers: { 'if-none-match': 'W/"1-1"', 'if-modified-since': modified, 'cache-control': 'max-age=0' } });
      expect(other.status, path).toBe(200);
    }
  });
});
