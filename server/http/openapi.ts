/**
 * The OpenAPI 3.1 document of the REST API, built at start-up from the route table
 * (`routes.ts`) and the very Zod schemas that check requests and answers (Zod 4's JSON Schema
 * output), never by hand.
 *
 * Procedure routes are described by the procedure they call: its input schema gives the path,
 * query or body parameters, its output schema the answer. The streams, `/health` and the
 * document itself carry their description (`doc`) on their line of the table, made of the same
 * shared schemas. The OpenID Connect protocol endpoints and pages are not here:
 * `/.well-known/openid-configuration` is their machine-readable description, and they answer
 * in OAuth's error format, not ours.
 */
import { z } from 'zod';
import { ErrorBody, ErrorNameSchema } from '../../shared/errors.ts';
import { ACCESS_TOKEN_COOKIE } from '../../shared/index.ts';
import type { Config } from '../config.ts';
import { appRouter } from '../router.ts';
import type { Operation } from './operation.ts';
import { routes, type ProcedureRoute, type Route } from './routes.ts';

type JsonSchema = Record<string, unknown>;

/** The document's `info.version`: the version of the API contract, not of this package. */
export const API_VERSION = '1.0.0';

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  204: 'No content',
  206: 'Partial content: the requested range',
  304: 'Not modified: the ETag still matches',
  400: 'Bad request: the Error body names the field (`details.path`)',
  401: 'No valid session',
  403: 'Not allowed, or a write from another origin',
  404: 'Not found',
  408: 'The request body took too long to arrive',
  413: 'The body or file is too large',
  412: 'The file does not meet the request\'s If-Match or If-Unmodified-Since condition',
  416: 'The requested range is outside the file (`Content-Range` names its size)',
  429: 'Too many requests: retry later',
  431: 'The request line and headers are too large (over 16 KB)',
  500: 'Unexpected error: its details stay in the server log',
  503: 'A service it depends on (the database, human verification) is not answering',
};

/**
 * The document's shared schemas: every shared schema with an id (`.meta({ id })`, e.g. `Profile`)
 * becomes one entry of `components.schemas` that operations refer to, as requests send it
 * (`ProfileInput`, when that differs) or answers carry it (`Profile`).
 */
class Components {
  readonly schemas: Record<string, JsonSchema> = {};

  /** JSON Schema (draft 2020-12, OpenAPI 3.1's dialect) of a schema, with shared parts referred to. */
  of(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
    const { $schema: _dialect, $defs, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
    const defs = ($defs ?? {}) as Record<string, JsonSchema>;
    // As requests send it, a schema is `XInput` until `finish` finds it the same as `X`.
    const names = new Map(Object.keys(defs).map((id) => [id, io === 'output' ? id : `${id}Input`] as const));
    const relink = <T>(value: T): T =>
      JSON.parse(JSON.stringify(value).replace(/"#\/\$defs\/([^"]+)"/g, (_m, id: string) => JSON.stringify(`#/components/schemas/${names.get(id) ?? id}`))) as T;
    for (const [id, def] of Object.entries(defs)) {
      const name = names.get(id) as string;
      const linked = relink(def);
      const known = this.schemas[name];
      if (known && JSON.stringify(known) !== JSON.stringify(linked)) throw new Error(`two different schemas are named ${name}`);
      this.schemas[name] = linked;
    }
    return relink(rest);
  }

  /**
   * The shared schemas once every operation is described: each `XInput` that is the same as
   * `X` (once the schemas it refers to are merged too) is merged into `X`; `relink` points the
   * operations' references at what is left.
   */
  finish(): { schemas: Record<string, JsonSchema>; relink<T>(value: T): T } {
    const merged = new Map<string, string>();
    const relink = <T>(value: T): T =>
      JSON.parse(JSON.stringify(value).replace(/"#\/components\/schemas\/(\w+)"/g, (ref, name: string) => (merged.has(name) ? `"#/components/schemas/${merged.get(name)}"` : ref))) as T;
    for (let changed = true; changed; ) {
      changed = false;
      for (const name of Object.keys(this.schemas)) {
        const base = name.replace(/Input$/, '');
        if (base === name || merged.has(name) || !this.schemas[base]) continue;
        if (JSON.stringify(relink(this.schemas[name])) !== JSON.stringify(relink(this.schemas[base]))) continue;
        merged.set(name, base);
        changed = true;
      }
    }
    const left = Object.entries(this.schemas).filter(([name]) => !merged.has(name));
    const schemas = Object.fromEntries(left.sort(([a], [b]) => a.localeCompare(b)).map(([name, schema]) => [name, relink(schema)]));
    return { schemas, relink };
  }
}

/** The named parameters of an Express path, in order; `*name` is a venue id that may hold slashes. */
export function expressParams(path: string): string[] {
  return [...path.matchAll(/[:*](\w+)/g)].map((m) => m[1] as string);
}

/** `/venues/*venueId/config` → `/venues/{venueId}/config`. */
export function openApiPath(path: string): string {
  return path.replace(/[:*](\w+)/g, '{$1}');
}

/** The statuses an operation may answer with an Error body. */
function errorStatuses(op: Operation): number[] {
  // 431: the request line and headers past the parser's 16 KB, whatever the path. 503: the
  // database stayed busy past its timeout (another process held the write lock).
  const statuses = new Set([400, 431, 500, 503, ...(op.errors ?? [])]);
  // An expired or ended session is a 401 wherever a session is read, even where it is optional.
  if (op.session !== 'none') statuses.add(401);
  if (op.session === 'required') statuses.add(403);
  if (op.method !== 'get') [403, 408].forEach((s) => statuses.add(s));
  if (op.body) statuses.add(413);
  if ('file' in op.answer) [403, 404, 412, 416].forEach((s) => statuses.add(s));
  return [...statuses].sort((a, b) => a - b);
}

interface ProcedureDef {
  inputs: unknown[];
  output?: unknown;
  meta?: { session?: string };
}

/** A route's procedure as tRPC defines it: its parsers (Zod schemas) and meta. */
function procedureDef(route: ProcedureRoute): ProcedureDef {
  // tRPC keeps each procedure's parsers on `_def` (what OpenAPI adapters for tRPC read too).
  const procedures = appRouter._def.procedures as unknown as Record<string, { _def: ProcedureDef } | undefined>;
  const procedure = procedures[route.procedure];
  if (!procedure) throw new Error(`route ${route.method} ${route.path}: no procedure ${route.procedure}`);
  return procedure._def;
}

/** A JSON route as an operation: its input split into path parameters and the query or body. */
function fromRoute(route: ProcedureRoute): Operation {
  const def = procedureDef(route);
  const input = def.inputs[0] as z.ZodType | undefined;
  const output = def.output as z.ZodType | undefined;
  if (!output) throw new Error(`route ${route.method} ${route.path}: ${route.procedure} declares no output`);
  // Path parameters keep the names the path gives them; their schemas are those of the input
  // properties they fill.
  const params = expressParams(route.path).map((name) => ({ name, key: route.rename?.[name] ?? name }));
  const shape = input ? objectShape(input) : {};
  const pick = Object.fromEntries(params.map((p) => [p.key, true] as const));
  const op: Operation = {
    method: route.method,
    path: route.path,
    tag: route.procedure.split('.')[0] as string,
    summary: route.summary,
    session: def.meta?.session === 'required' ? 'required' : 'optional',
    answer: { json: output },
    ...(route.errors ? { errors: route.errors } : {}),
  };
  if (params.length > 0) op.pathParams = z.object(Object.fromEntries(params.map((p) => [p.name, shape[p.key] ?? z.string()])));
  const rest = input && params.length > 0 ? omitKeys(input, pick) : input;
  if (rest && (route.input === 'query' || route.input === 'query-or-body')) op.query = rest;
  if (rest && route.input === 'body') op.body = { json: rest };
  return op;
}

/** The properties of an object schema, looking through `.optional()`. */
function objectShape(schema: z.ZodType): Record<string, z.ZodType> {
  const inner = schema instanceof z.ZodOptional ? (schema.unwrap() as z.ZodType) : schema;
  return inner instanceof z.ZodObject ? (inner.shape as Record<string, z.ZodType>) : {};
}

function omitKeys(schema: z.ZodType, keys: Record<string, true>): z.ZodType {
  const inner = schema instanceof z.ZodOptional ? (schema.unwrap() as z.ZodType) : schema;
  return inner instanceof z.ZodObject ? inner.omit(keys) : schema;
}

/** Parameters from an object schema's properties. */
function parameters(schema: z.ZodType, where: 'path' | 'query' | 'header', components: Components): JsonSchema[] {
  const json = components.of(schema, 'input');
  const properties = (json.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((json.required ?? []) as string[]);
  return Object.entries(properties).map(([name, schema]) => ({
    name,
    in: where,
    required: where === 'path' || required.has(name),
    schema,
    ...(name === 'venueId' && where === 'path' ? { description: 'A venue id; its slashes stay as they are (`Conf.org/2027`).' } : {}),
  }));
}

const ERROR_REF = { $ref: '#/components/schemas/Error' };
/**
 * The errors of an OAuth endpoint: OAuth's answer (RFC 6749 §5.2, RFC 7591 §3.2.2) for its own
 * refusals, the Error body for what the service answers before any route does.
 */
const OAUTH_ERROR = { anyOf: [{ type: 'object', required: ['error'], properties: { error: { type: 'string' }, error_description: { type: 'string' } } }, ERROR_REF] };

const IF_NONE_MATCH = { name: 'If-None-Match', in: 'header', required: false, schema: { type: 'string' }, description: 'The ETag of a copy already held (answered 304)' };
/** What a file download honours: a byte range (206), and the ETag it was given before (304). */
const FILE_REQUEST_HEADERS = [{ name: 'Range', in: 'header', required: false, schema: { type: 'string', examples: ['bytes=0-1023'] }, description: 'One byte range (answered 206)' }, IF_NONE_MATCH];

function operationObject(op: Operation, components: Components): JsonSchema {
  const responses: Record<string, JsonSchema> = {};
  if ('json' in op.answer) {
    const status = op.answer.status ?? 200;
    const headers = op.etag ? { headers: { ETag: { description: 'Of this text, quoted', schema: { type: 'string' } } } } : {};
    responses[String(status)] = { description: STATUS_TEXT[status], ...headers, content: { 'application/json': { schema: components.of(op.answer.json, 'output') } } };
    if (op.etag) responses['304'] = { description: STATUS_TEXT[304] };
  } else if ('empty' in op.answer) {
    responses[String(op.answer.empty)] = { description: op.answer.empty === 204 ? STATUS_TEXT[204] : 'OK, with no body' };
  } else if ('html' in op.answer) {
    responses['200'] = { description: 'An HTML page', content: { 'text/html': { schema: { type: 'string' } } } };
  } else {
    const content = Object.fromEntries(op.answer.file.map((type) => [type, { schema: { type: 'string', contentMediaType: type } }]));
    const headers = { ETag: { description: 'The SHA-1 of the file, quoted', schema: { type: 'string' } } };
    responses['200'] = { description: 'The file', headers, content };
    responses['206'] = { description: STATUS_TEXT[206], headers, content };
    responses['304'] = { description: STATUS_TEXT[304] };
  }
  for (const status of errorStatuses(op)) {
    const json = { 'application/json': { schema: op.errorBody === 'oauth' ? OAUTH_ERROR : ERROR_REF } };
    responses[String(status)] = { description: STATUS_TEXT[status] ?? 'Error', content: op.errorBody === 'page' ? { 'text/html': { schema: { type: 'string' } }, ...json } : json };
  }
  const object: JsonSchema = {
    operationId: `${op.method}${openApiPath(op.path).replace(/[{}]/g, '').replace(/(?:^|[/.-])(\w)/g, (_m, c: string) => c.toUpperCase())}`,
    tags: [op.tag],
    summary: op.summary,
    responses,
    ...(op.errorBody ? { 'x-error-format': op.errorBody } : {}),
  };
  const params = [
    ...(op.pathParams ? parameters(op.pathParams, 'path', components) : []),
    ...(op.query ? parameters(op.query, 'query', components) : []),
    ...(op.headers ? parameters(op.headers, 'header', components) : []),
    ...('file' in op.answer ? FILE_REQUEST_HEADERS : []),
    ...(op.etag ? [IF_NONE_MATCH] : []),
  ];
  if (params.length > 0) object.parameters = params;
  if (op.body && 'json' in op.body) {
    object.requestBody = { required: true, content: { 'application/json': { schema: components.of(op.body.json, 'input') } } };
  } else if (op.body && 'form' in op.body) {
    object.requestBody = { required: true, content: { 'application/x-www-form-urlencoded': { schema: components.of(op.body.form, 'input') } } };
  } else if (op.body) {
    // Multipart fields arrive as text; the document shows what they must parse as (integers for indices).
    const fields = components.of(op.body.multipart, 'output');
    const properties = { ...(fields.properties as JsonSchema), [op.body.file]: { type: 'string', contentMediaType: 'application/octet-stream' } };
    const required = [...((fields.required ?? []) as string[]), op.body.file];
    object.requestBody = {
      required: true,
      content: { 'multipart/form-data': { schema: { type: 'object', properties, required, additionalProperties: false } } },
    };
  }
  if (op.session === 'none') object.security = [];
  if (op.session === 'optional') object.security = [{}, { accessTokenCookie: [] }, { bearerToken: [] }];
  return object;
}

/** Every operation the document describes: the table's routes of a procedure, and those with a `doc`, in the table's order. */
export function operations(table: readonly Route[] = routes): Operation[] {
  return table.flatMap((route): Operation[] => {
    if (route.kind === 'procedure') return [fromRoute(route)];
    return 'doc' in route && route.doc ? [{ method: route.method, path: route.path, ...route.doc }] : [];
  });
}

/** The whole document for a configuration (its servers are the configured addresses). */
export function buildOpenApiDocument(config: Pick<Config, 'baseUrl' | 'devBaseUrl'>): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  const components = new Components();
  for (const op of operations()) {
    const path = openApiPath(op.path);
    const item = (paths[path] ??= {});
    if (item[op.method]) throw new Error(`two operations for ${op.method.toUpperCase()} ${path}`);
    item[op.method] = operationObject(op, components);
  }
  const error = components.of(ErrorBody, 'output');
  components.schemas.Error = { ...error, properties: { ...(error.properties as JsonSchema), name: components.of(ErrorNameSchema, 'output') } };
  const { schemas, relink } = components.finish();
  return relink({
    openapi: '3.1.0',
    info: {
      title: 'Peer-review accounts, attachments and sign-in',
      version: API_VERSION,
      description:
        'The REST face of the service. Every operation here calls the same procedure a tRPC client calls at `/trpc`. ' +
        'Errors answer with one body: `{status, name, message, details}`. ' +
        'The OpenID Connect endpoints are described by `/.well-known/openid-configuration`.',
    },
    servers: [
      { url: config.baseUrl, description: 'production' },
      { url: config.devBaseUrl, description: 'development' },
    ],
    security: [{ accessTokenCookie: [] }, { bearerToken: [] }],
    tags: ['accounts', 'venue', 'attachments', 'oidc', 'service'].map((name) => ({ name })),
    paths,
    components: {
      schemas,
      securitySchemes: {
        accessTokenCookie: { type: 'apiKey', in: 'cookie', name: ACCESS_TOKEN_COOKIE, description: 'Set by `POST /login`' },
        bearerToken: { type: 'http', scheme: 'bearer', description: 'The `token` of a login answer, for clients without cookies' },
      },
    },
  });
}
