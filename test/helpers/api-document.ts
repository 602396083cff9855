/**
 * Checks an HTTP answer against the API document: the path and method must be documented, the
 * status must be one the document lists for them, and a JSON body must validate against the
 * document's schema for that status. A path the document does not have must be a 404 Error
 * body, unless it belongs to a protocol the document leaves to its own description (OpenID
 * Connect, tRPC, a CORS preflight) or to the reference page.
 *
 * `test/setup/validate-responses.ts` runs this on every response a test's `fetch` receives
 * from a local server, so every HTTP test checks the document without asking.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { buildOpenApiDocument } from '../../server/http/openapi.ts';

type Json = Record<string, any>;

/** Paths whose answers follow another description than the OpenAPI document. */
const OTHER_PROTOCOLS = [/^\/trpc(\/|$)/i, /^\/oidc\/(authorize|token|par|device\/auth|userinfo|jwks|revoke|introspect|logout|logout\/confirm|login|login\/passkey|consent|pages\.css)\/?$/i, /^\/\.well-known\//i, /^\/docs(\/|$)/i, /^\/webauthn\//i, /^\/account(\/|$)/i, /^\/$/, /^\/assets\//i, /^\/attachment\/tus(\/|$)/i];

export { serviceOrigins } from './service-origins.ts';

export const apiDocument: Json = buildOpenApiDocument({ baseUrl: 'http://127.0.0.1', devBaseUrl: 'http://127.0.0.1' });

const ajv = new Ajv2020({ allErrors: true, strict: false });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);
const compiled = new Map<object, ValidateFunction>();
const ERROR_REF = { $ref: '#/components/schemas/Error' };

function validator(schema: object): ValidateFunction {
  let fn = compiled.get(schema);
  if (!fn) {
    // The document's references point into `#/components/schemas`: compiled beside them.
    fn = ajv.compile({ ...schema, components: { schemas: apiDocument.components.schemas } });
    compiled.set(schema, fn);
  }
  return fn;
}

interface Matcher {
  template: string;
  pattern: RegExp;
  literal: number;
}

/** Literal paths before templated ones, so `/pdf/compare` is not taken for `/pdf/{id}`. */
const matchers: Matcher[] = Object.keys(apiDocument.paths)
  .map((template) => {
    // A venue id holds slashes, so `{venueId}` may span segments; other parameters may not.
    const source = template
      .split(/(\{\w+\})/)
      .map((part) => (part === '{venueId}' ? '.+' : part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^$()|[\]\\]/g, '\\$&')))
      .join('');
    // As Express matches them: any letter case, and an optional trailing slash.
    return { template, pattern: new RegExp(`^${source}/?$`, 'i'), literal: template.replace(/\{\w+\}/g, '').length };
  })
  .sort((a, b) => b.literal - a.literal);

/** The document's path template for a concrete path, if any. */
export function documentedPath(path: string): string | undefined {
  return matchers.find((m) => m.pattern.test(path))?.template;
}

export function isOtherProtocol(path: string): boolean {
  return OTHER_PROTOCOLS.some((p) => p.test(path));
}

export interface Answer {
  method: string;
  path: string;
  status: number;
  contentType: string;
  /** The body's text, for JSON answers. */
  text: string | undefined;
  /** Its `Access-Control-Allow-Origin`, if any. */
  allowOrigin?: string | null;
}

/** The problems of one answer, empty when it is what the document says. */
export function problemsOf(answer: Answer): string[] {
  const where = `${answer.method} ${answer.path} → ${answer.status}`;
  if (isOtherProtocol(answer.path)) return [];
  // A CORS preflight's answer is the CORS protocol's (for the web application's origin: `http/cors.ts`).
  if (answer.method === 'OPTIONS' && answer.status === 204 && answer.allowOrigin) return [];
  const template = documentedPath(answer.path);
  const operation: Json | undefined = template ? apiDocument.paths[template][answer.method.toLowerCase()] : undefined;
  const isJson = /^application\/json\b/.test(answer.contentType);
  const body = isJson && answer.text ? (JSON.parse(answer.text) as unknown) : undefined;
  if (!operation) {
    // Unknown routes answer 404 with an Error body.
    if (answer.status !== 404 || !isJson) return [`${where}: not in the API document, and not a 404 Error body`];
    return errorsOf(validator(ERROR_REF), body, where);
  }
  const response: Json | undefined = operation.responses[String(answer.status)];
  if (!response) return [`${where}: status not in the API document (it lists ${Object.keys(operation.responses).join(', ')})`];
  if (!response.content) return [];
  const types = Object.keys(response.content);
  const type = answer.contentType.split(';')[0]?.trim() ?? '';
  if (!types.includes(type)) return [`${where}: content type ${type || '(none)'} is not one of ${types.join(', ')}`];
  if (!isJson) return [];
  return errorsOf(validator(response.content[type].schema), body, where);
}

function errorsOf(validate: ValidateFunction, body: unknown, where: string): string[] {
  if (validate(body)) return [];
  return (validate.errors ?? []).map((e) => `${where}: body${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`);
}
