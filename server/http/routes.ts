/**
 * The route table: every path the service answers, one line each, as node-oidc-provider's
 * `initialize_app.js` lists its endpoints. An entry names its method and path, the middleware
 * it needs (how its body is read, whether the body deadline applies, CORS, whether cross-site
 * writes are allowed) and what answers it (its kind and handler). `mount.ts` mounts it in one
 * loop; the API document (`openapi.ts`) is built from the same entries.
 *
 * Order never matters: `mount.ts` registers the entries by precedence (a literal segment before
 * a parameter, a parameter before a venue id that spans segments), so `/pdf/compare` is the
 * procedure's and `/pdf/:id` never sees it, whatever the order of the lines below.
 *
 * Rate limits are not route middleware: each is checked by the service that owns the limited
 * action (sign-in, sign-up, mail, uploads), which knows the account as well as the address.
 */
import type { AnyProcedure } from '@trpc/server';
import type { RequestHandler } from 'express';
import { z } from 'zod';
import {
  AttachmentQuery,
  ClientMetadata,
  ClientRegistration,
  IntrospectionAnswer,
  IntrospectionForm,
  RevocationForm,
  EndSessionParams,
  TokenAnswerBody,
  TokenRequestForm,
  DeviceAuthorizationForm,
  DeviceAuthorizationAnswer,
  PushedAuthorizationAnswer,
  PushedAuthorizationForm,
  UserInfoAnswer,
  ChunkFields,
  ChunkStatus,
  EditAttachmentQuery,
  EntityAttachmentQuery,
  HealthResult,
  HumanVerificationToken,
  LivenessResult,
  PdfCompareQuery,
  PdfQuery,
  ReadinessResult,
  StoredPdfParams,
  UploadFields,
  UploadResult,
  WebAuthnAuthQuery,
} from '../../shared/index.ts';
import type { AppRouter } from '../router.ts';
import type { DocsHandlers } from './docs.ts';
import type { FileHandlers } from './files.ts';
import type { TusHandlers } from './tus.ts';
import type { OidcHandlers } from './oidc.ts';
import type { WebHandlers } from '../web/pages/index.ts';
import type { ProviderPageHandlers } from '../web/pages/provider/index.ts';
import type { PasskeyHandlers } from '../web/pages/passkeys.ts';
import type { Operation } from './operation.ts';

type PathsOf<T, Prefix extends string = ''> = {
  [K in keyof T & string]: T[K] extends AnyProcedure ? `${Prefix}${K}` : PathsOf<T[K], `${Prefix}${K}.`>;
}[keyof T & string];

/** Every procedure of the router by its dotted path, e.g. `accounts.login`. */
export type ProcedurePath = PathsOf<AppRouter['_def']['record']>;

/** Every named handler a `stream`, `oauth`, `page`, `health` or `docs` route may name. */
export type Handlers = FileHandlers & TusHandlers & OidcHandlers & ProviderPageHandlers & DocsHandlers & WebHandlers & PasskeyHandlers & { health: RequestHandler; healthLive: RequestHandler; healthReady: RequestHandler };

/**
 * How a route's body is read before its handler runs:
 * - `json`: the JSON parser (1 MB, nesting checked); a request without a JSON body passes as is.
 * - `form`: a URL-encoded form (the sign-in provider's); a form it cannot read is answered in
 *   the route's own format (OAuth's error body, or an error page).
 * - `account-form`: a URL-encoded form of the account pages (`server/web/`), up to 1 MB and 2,000
 *   fields (a profile of many rows); one it cannot read is an account error page.
 * - `multipart`: not read here; the handler streams it (uploads).
 * - `octets`: not read here; the handler streams it (tus's `application/offset+octet-stream`,
 *   which the same-origin rule then accepts from our own pages).
 * - `none`: not read at all.
 */
export type BodyKind = 'json' | 'form' | 'account-form' | 'multipart' | 'octets' | 'none';

/** The per-route middleware; every field left out takes the default that most routes need. */
interface Middleware {
  /** Default `json`. */
  body?: BodyKind;
  /** Whether the body must arrive within the body deadline (60 s). Default true; uploads have an hour. */
  bodyDeadline?: boolean;
  /**
   * `protocol`: open to any origin, preflights answered (the sign-in provider's endpoints, which
   * read no cookies); `read-only`: any origin may read the answer (the API document). Default none.
   */
  cors?: 'protocol' | 'read-only';
  /**
   * Whether a write authenticated by our cookies must come from our own pages (`same-origin.ts`).
   * Default true; false for the sign-in provider's form endpoints, which other sites post to
   * by design and which carry their own protection (PKCE, CSRF tokens).
   */
  sameOrigin?: boolean;
}

/**
 * A REST route of a procedure: it calls the procedure through a caller, exactly as a tRPC
 * client's call does. `input` says where the procedure's input comes from, to which the path's
 * parameters are added; the API document describes the route by the procedure's own input and
 * output schemas, so the route and its description cannot drift.
 */
export interface ProcedureRoute extends Middleware {
  kind: 'procedure';
  method: 'get' | 'post' | 'put' | 'delete';
  /** Express syntax: `:name` is one segment, `*name` (a venue id) may span several. */
  path: string;
  procedure: ProcedurePath;
  /**
   * The JSON body, the query string, or nothing. `query-or-body`: the JSON body when one was
   * sent, else the query string (a `DELETE` that clients send either way); the API document
   * shows the query form.
   */
  input: 'body' | 'query' | 'query-or-body' | 'none';
  /** The input property each path parameter fills, when it is not named the same. */
  rename?: Record<string, string>;
  /** One line for the API document. */
  summary: string;
  /** Error statuses besides those every route may answer (see `openapi.ts`). */
  errors?: number[];
}

/** How the API document shows a route that is not a procedure's. */
export type OperationDoc = Omit<Operation, 'method' | 'path'>;

/**
 * A route answered by a named handler:
 * - `stream`: uploads and downloads (`files.ts`);
 * - `oauth`: the sign-in provider's protocol endpoints, which answer in OAuth's formats (`oidc.ts`);
 * - `page`: HTML pages (the authorization endpoint and the provider's stylesheet: `oidc.ts`; its
 *   login, second step and consent: `server/web/pages/provider/`; the account pages under
 *   `/account`: `server/web/pages/`, one file per flow;
 *   the passkey scripts and the Python client's passkey page: `server/web/pages/passkeys.ts`);
 * - `health`: the health check (`health.ts`); `docs`: the API document and its reference page (`docs.ts`).
 * Those with a `doc` are in the API document.
 */
export interface HandlerRoute extends Middleware {
  kind: 'stream' | 'oauth' | 'page' | 'health' | 'docs';
  method: 'get' | 'post' | 'put' | 'delete' | 'head' | 'patch' | 'options';
  path: string;
  handler: keyof Handlers;
  doc?: OperationDoc;
}

/**
 * An answer to `OPTIONS`, which everywhere else is an unknown route (404):
 * - `preflight`: the CORS preflight of a `protocol` route (204 with its CORS headers);
 * - `allow`: 200 with `Allow`, the methods the table has for the path (Express's own answer).
 */
export interface OptionsRoute extends Middleware {
  kind: 'preflight' | 'allow';
  method: 'options';
  path: string;
}

/** tRPC's own endpoint: every method, and every path under `path` (a procedure's name). */
export interface TrpcRoute extends Middleware {
  kind: 'trpc';
  method: 'any';
  path: string;
}

export type Route = ProcedureRoute | HandlerRoute | OptionsRoute | TrpcRoute;

const ANY_FILE = ['application/pdf', 'application/zip', 'application/octet-stream'];
/** 429 and 503: after many uploads, a human-verification token is needed and checked. */
const UPLOAD_ERRORS = [429, 503];
/** After `UPLOAD_HUMAN_VERIFICATION_AFTER` uploads in an hour, each upload request carries a token. */
const UPLOAD_HEADERS = z.object({ 'cf-turnstile-token': HumanVerificationToken.optional() });

/** How the API document describes the streams: the same shared schemas that check them. */
const STREAM_DOCS = {
  upload: {
    tag: 'attachments',
    summary: "Upload a file for an invitation's field; answers its URL",
    session: 'required',
    headers: UPLOAD_HEADERS,
    body: { multipart: UploadFields, file: 'file' },
    answer: { json: UploadResult },
    errors: UPLOAD_ERRORS,
  },
  uploadChunk: {
    tag: 'attachments',
    summary: 'Upload one chunk; answers every chunk’s status, or the URL once the file is complete',
    session: 'required',
    headers: UPLOAD_HEADERS,
    body: { multipart: ChunkFields, file: 'file' },
    answer: { json: z.union([UploadResult, ChunkStatus]) },
    errors: UPLOAD_ERRORS,
  },
  attachment: {
    tag: 'attachments',
    summary: "A note's file field (`id`), or several notes' as a zip (`ids`)",
    session: 'optional',
    query: AttachmentQuery,
    answer: { file: ANY_FILE },
  },
  pdf: {
    tag: 'attachments',
    summary: "A note's PDF (`id`), or several as a zip (`ids`)",
    session: 'optional',
    query: PdfQuery,
    answer: { file: ['application/pdf', 'application/zip'] },
  },
  editAttachment: {
    tag: 'attachments',
    summary: 'A file field as one revision (edit) of a note held it',
    session: 'optional',
    query: EditAttachmentQuery,
    answer: { file: ANY_FILE },
  },
  groupAttachment: {
    tag: 'attachments',
    summary: "A file in a group's content (groups here hold none: see the README)",
    session: 'optional',
    query: EntityAttachmentQuery,
    answer: { file: ANY_FILE },
  },
  invitationAttachment: {
    tag: 'attachments',
    summary: "A file in an invitation's content (invitations here hold none: see the README)",
    session: 'optional',
    query: EntityAttachmentQuery,
    answer: { file: ANY_FILE },
  },
  compareView: {
    tag: 'attachments',
    summary: 'A page showing two revisions of a note’s PDF side by side',
    session: 'optional',
    query: PdfCompareQuery,
    answer: { html: true },
    errors: [404],
  },
  pdfById: {
    tag: 'attachments',
    summary: 'A stored PDF by its id (the last part of its URL)',
    session: 'optional',
    pathParams: StoredPdfParams,
    answer: { file: ['application/pdf'] },
  },
} satisfies Record<string, OperationDoc>;

/** The pages in the API document: those the real platform's clients open. */
const PAGE_DOCS = {
  webauthnAuth: {
    tag: 'accounts',
    summary: 'A page that runs the passkey step of a pending sign-in and posts `token` and `user` to `http://127.0.0.1:{callbackPort}` (the Python client)',
    session: 'none',
    query: WebAuthnAuthQuery,
    answer: { html: true },
    errors: [400],
  },
} satisfies Record<string, OperationDoc>;

/** The service's own routes in the API document. */
const SERVICE_DOCS = {
  health: {
    tag: 'service',
    summary: 'Whether the service and its database answer',
    session: 'none',
    answer: { json: HealthResult },
    errors: [503],
  },
  live: {
    tag: 'service',
    summary: 'Liveness: the process answers (whatever its database)',
    session: 'none',
    answer: { json: LivenessResult },
  },
  ready: {
    tag: 'service',
    summary: 'Readiness: every migration has run, the database takes a write and the file store is reachable; otherwise 503 with each check’s state in `details`',
    session: 'none',
    answer: { json: ReadinessResult },
    errors: [503],
  },
  apiDocument: {
    tag: 'service',
    summary: 'This document',
    session: 'none',
    answer: { json: z.record(z.string(), z.unknown()) },
    etag: true,
  },
} satisfies Record<string, OperationDoc>;

const BEARER = z.object({ authorization: z.string().describe('`Bearer <token>`: the initial access token, or the registration access token') });
const CLIENT_ID_PARAM = z.object({ clientId: z.string() });
const BASIC = z.object({ authorization: z.string().optional().describe('`Basic <base64(client_id:client_secret)>`, for `client_secret_basic`; or the client proves itself in the form') });
/**
 * The sign-in provider's protocol endpoints, as their standards define them (their answers are
 * checked by openid-client in the tests, not against this document): forms in, OAuth's JSON out,
 * OAuth's errors.
 */
const PROTOCOL_DOCS = {
  token: { tag: 'oidc', summary: 'Token endpoint (RFC 6749, RFC 8628): a code with its PKCE verifier, a refresh token, or a device code, for tokens', session: 'none', headers: BASIC, body: { form: TokenRequestForm }, answer: { json: TokenAnswerBody }, errors: [401], errorBody: 'oauth' },
  deviceAuthorization: { tag: 'oidc', summary: 'Device authorization (RFC 8628): a device or command line asks to sign someone in; the person answers on the device page (`verification_uri`) while the device polls the token endpoint with its device code', session: 'none', headers: BASIC, body: { form: DeviceAuthorizationForm }, answer: { json: DeviceAuthorizationAnswer }, errors: [401, 429], errorBody: 'oauth' },
  pushedAuthorization: { tag: 'oidc', summary: 'Pushed authorization request (RFC 9126): the client sends its authorization request first, proving itself as at the token endpoint, every check of the authorization endpoint answered as JSON; the answer (201) names it for one use within a minute, by `client_id` and `request_uri` at the authorization endpoint', session: 'none', headers: BASIC, body: { form: PushedAuthorizationForm }, answer: { json: PushedAuthorizationAnswer, status: 201 }, errors: [400, 401], errorBody: 'oauth' },
  introspect: { tag: 'oidc', summary: 'Token introspection (RFC 7662), for a client that authenticates', session: 'none', headers: BASIC, body: { form: IntrospectionForm }, answer: { json: IntrospectionAnswer }, errors: [401], errorBody: 'oauth' },
  revoke: { tag: 'oidc', summary: 'Token revocation (RFC 7009): revoked for the client it was issued to, or, for a public client\'s token, for its bearer sending `token` alone; 200 in every other case (an unknown token, another client\'s, none); 401 invalid_client when the client fails to prove itself, or a confidential client\'s token comes alone; 400 invalid_request when a client proves itself and sends no token', session: 'none', headers: BASIC, body: { form: RevocationForm }, answer: { empty: 200 }, errors: [400, 401], errorBody: 'oauth' },
  endSession: { tag: 'oidc', summary: 'Sign out (RP-Initiated Logout 1.0): at once with an id_token_hint naming the person signed in, otherwise a "Sign out?" page; then the registered post_logout_redirect_uri with state, or a "You are signed out" page', session: 'none', query: EndSessionParams, answer: { html: true }, errorBody: 'page' },
  endSessionForm: { tag: 'oidc', summary: 'Sign out (RP-Initiated Logout 1.0), the parameters sent as a form', session: 'none', body: { form: EndSessionParams }, answer: { html: true }, errorBody: 'page' },
  userinfo: { tag: 'oidc', summary: 'UserInfo (OpenID Connect Core §5.3): the claims of an access token (`Authorization: Bearer`)', session: 'none', answer: { json: UserInfoAnswer }, errors: [401], errorBody: 'oauth' },
} satisfies Record<string, OperationDoc>;

/**
 * The sign-in provider's client registration (RFC 7591) and its management (RFC 7592). Its own
 * refusals are OAuth's JSON (`error`, `error_description`): 401 `invalid_token` without a valid
 * initial or registration access token, 400 `invalid_redirect_uri` or `invalid_client_metadata`
 * for metadata it cannot register. What the service answers before any route (a malformed URL, a
 * body too large or too slow) stays the Error body: the document says either.
 */
const REGISTRATION_DOCS = {
  register: { tag: 'oidc', summary: 'Register a client (RFC 7591)', session: 'none', headers: BEARER, body: { json: ClientMetadata }, answer: { json: ClientRegistration, status: 201 }, errors: [401], errorBody: 'oauth' },
  read: { tag: 'oidc', summary: 'Read a client’s registration (RFC 7592)', session: 'none', headers: BEARER, pathParams: CLIENT_ID_PARAM, answer: { json: ClientRegistration }, errors: [401], errorBody: 'oauth' },
  update: { tag: 'oidc', summary: 'Replace a client’s registration (RFC 7592); answers a new registration access token', session: 'none', headers: BEARER, pathParams: CLIENT_ID_PARAM, body: { json: ClientMetadata }, answer: { json: ClientRegistration }, errors: [401], errorBody: 'oauth' },
  remove: { tag: 'oidc', summary: 'Delete a client (RFC 7592)', session: 'none', headers: BEARER, pathParams: CLIENT_ID_PARAM, answer: { empty: 204 }, errors: [401], errorBody: 'oauth' },
} satisfies Record<string, OperationDoc>;

/** A page of the account pages (`server/web/`): a GET with no body. */
const accountPage = (path: string, handler: keyof Handlers): HandlerRoute => ({ kind: 'page', method: 'get', path, body: 'none', handler });
/**
 * A form of the account pages: a URL-encoded POST. Exempt from the same-origin rule (which
 * refuses form bodies) because every such handler checks the browser's CSRF token instead
 * (`server/web/csrf.ts`, through `handle(…, {post: true})`).
 */
const accountForm = (path: string, handler: keyof Handlers): HandlerRoute => ({ kind: 'page', method: 'post', path, body: 'account-form', sameOrigin: false, handler });

/** Every route of the service. The API document lists the documented ones in this order. */
export const routes: Route[] = [
  // ---- procedures: JSON in, JSON out --------------------------------------------------------------
  // sign-up and activation (503: the human-verification service did not answer)
  { kind: 'procedure', method: 'post', path: '/register', procedure: 'accounts.register', input: 'body', summary: 'Sign up: sends the activation mail', errors: [429, 503] },
  { kind: 'procedure', method: 'get', path: '/activatable/:token', procedure: 'accounts.activatable', input: 'none', summary: 'The account an activation token is for', errors: [404] },
  { kind: 'procedure', method: 'put', path: '/activate/:token', procedure: 'accounts.activate', input: 'body', summary: 'Activate an account from its token; starts a session', errors: [404] },
  { kind: 'procedure', method: 'post', path: '/activatable', procedure: 'accounts.resendActivation', input: 'body', summary: 'Send the activation mail again', errors: [404, 429] },
  { kind: 'procedure', method: 'get', path: '/tildeusername', procedure: 'accounts.tildeUsername', input: 'query', summary: 'The next free tilde username for a name' },
  // sessions
  { kind: 'procedure', method: 'post', path: '/login', procedure: 'accounts.login', input: 'body', summary: 'Sign in: sets the session cookies', errors: [429] },
  { kind: 'procedure', method: 'post', path: '/login/passkey/options', procedure: 'accounts.passkeyLoginOptions', input: 'none', summary: 'Begin a sign-in with a passkey and no password: WebAuthn request options and their challenge id', errors: [429] },
  { kind: 'procedure', method: 'post', path: '/login/passkey', procedure: 'accounts.passkeyLogin', input: 'body', summary: 'Sign in with a passkey (its assertion for the challenge id): sets the session cookies', errors: [403, 429] },
  { kind: 'procedure', method: 'post', path: '/refreshToken', procedure: 'accounts.refreshToken', input: 'none', summary: 'A new access token from the refresh cookie', errors: [401] },
  { kind: 'procedure', method: 'post', path: '/logout', procedure: 'accounts.logout', input: 'none', summary: 'End this session' },
  { kind: 'procedure', method: 'post', path: '/logout-all-devices', procedure: 'accounts.logoutOtherDevices', input: 'none', summary: 'End every other session of this person' },
  // multi-factor sign-in: the second step (after `/login` answered `mfaPending`), then the factors
  { kind: 'procedure', method: 'post', path: '/mfa/challenge', procedure: 'accounts.mfa.challenge', input: 'body', summary: 'Second step: mail a code (emailOtp) or get passkey request options', errors: [429] },
  { kind: 'procedure', method: 'post', path: '/mfa/verify', procedure: 'accounts.mfa.verify', input: 'body', summary: 'Second step: a code, recovery code or passkey assertion; sets the session cookies as /login does', errors: [429] },
  { kind: 'procedure', method: 'get', path: '/mfa/status', procedure: 'accounts.mfa.status', input: 'none', summary: 'The caller’s second factors' },
  { kind: 'procedure', method: 'put', path: '/mfa/preferred', procedure: 'accounts.mfa.setPreferred', input: 'body', summary: 'The method offered first at sign-in' },
  { kind: 'procedure', method: 'post', path: '/mfa/setup/totp/init', procedure: 'accounts.mfa.totpInit', input: 'none', summary: 'Start setting up an authenticator app: secret and QR code' },
  { kind: 'procedure', method: 'post', path: '/mfa/setup/totp/verify', procedure: 'accounts.mfa.totpVerify', input: 'body', summary: 'Finish setting up an authenticator app with one of its codes' },
  { kind: 'procedure', method: 'delete', path: '/mfa/totp', procedure: 'accounts.mfa.totpDelete', input: 'none', summary: 'Remove the authenticator app (recent sign-in needed)', errors: [403] },
  { kind: 'procedure', method: 'post', path: '/mfa/setup/email', procedure: 'accounts.mfa.emailSetup', input: 'none', summary: 'Turn on codes by email' },
  { kind: 'procedure', method: 'delete', path: '/mfa/email', procedure: 'accounts.mfa.emailDelete', input: 'none', summary: 'Turn off codes by email (recent sign-in needed)', errors: [403] },
  { kind: 'procedure', method: 'post', path: '/mfa/setup/passkey/init', procedure: 'accounts.mfa.passkeyInit', input: 'none', summary: 'Start adding a passkey: creation options (recent sign-in needed)', errors: [403] },
  { kind: 'procedure', method: 'post', path: '/mfa/setup/passkey/verify', procedure: 'accounts.mfa.passkeyVerify', input: 'body', summary: 'Finish adding a passkey', errors: [403] },
  { kind: 'procedure', method: 'get', path: '/mfa/passkeys', procedure: 'accounts.mfa.passkeys', input: 'none', summary: 'The caller’s passkeys' },
  { kind: 'procedure', method: 'delete', path: '/mfa/passkeys/:credentialId', procedure: 'accounts.mfa.passkeyDelete', input: 'none', summary: 'Remove a passkey (recent sign-in needed)', errors: [403, 404] },
  { kind: 'procedure', method: 'post', path: '/mfa/recovery-codes/regenerate', procedure: 'accounts.mfa.regenerateRecoveryCodes', input: 'none', summary: 'New recovery codes; the old ones stop working (recent sign-in needed)', errors: [403] },
  { kind: 'procedure', method: 'delete', path: '/mfa/trusted-devices', procedure: 'accounts.mfa.forgetTrustedDevices', input: 'none', summary: 'Forget every remembered browser: each asks for the second factor again' },
  { kind: 'procedure', method: 'post', path: '/mfa/reauthenticate/challenge', procedure: 'accounts.mfa.reauthChallenge', input: 'none', summary: 'Mail a code for re-authenticating with emailOtp', errors: [429] },
  { kind: 'procedure', method: 'post', path: '/mfa/reauthenticate', procedure: 'accounts.mfa.reauthenticate', input: 'body', summary: 'Prove it is you again (password or a code) for ten minutes of factor changes', errors: [429] },
  // passwords and emails
  { kind: 'procedure', method: 'post', path: '/resettable', procedure: 'accounts.requestReset', input: 'body', summary: 'Send a password-reset mail', errors: [404, 429, 503] },
  { kind: 'procedure', method: 'get', path: '/resettable/:token', procedure: 'accounts.resettable', input: 'none', summary: 'The account a reset token is for', errors: [404] },
  { kind: 'procedure', method: 'put', path: '/reset/:token', procedure: 'accounts.resetPassword', input: 'body', summary: 'Choose a new password from a reset token', errors: [404, 429] },
  { kind: 'procedure', method: 'post', path: '/user/confirm', procedure: 'accounts.confirmEmail', input: 'body', summary: 'Add an email: sends a confirmation mail', errors: [429] },
  { kind: 'procedure', method: 'post', path: '/user/confirm/:token', procedure: 'accounts.confirmEmail', input: 'body', rename: { token: 'activationToken' }, summary: 'Add an email to an account being activated', errors: [404, 429] },
  { kind: 'procedure', method: 'put', path: '/activatelink', procedure: 'accounts.activateLink', input: 'body', summary: 'Confirm an email with its code', errors: [404, 429] },
  { kind: 'procedure', method: 'put', path: '/activatelink/:token', procedure: 'accounts.activateLink', input: 'body', rename: { token: 'activationToken' }, summary: 'Confirm an email of an account being activated', errors: [404, 429] },
  // password & security (the security page's; not in the spec)
  { kind: 'procedure', method: 'post', path: '/password', procedure: 'accounts.changePassword', input: 'body', summary: 'Change the password (the current one required); ends the other sessions unless told not to', errors: [429] },
  { kind: 'procedure', method: 'get', path: '/sessions', procedure: 'accounts.sessions', input: 'none', summary: "The caller's live sessions, with browser, system, address, created and last seen" },
  { kind: 'procedure', method: 'delete', path: '/sessions/:id', procedure: 'accounts.endSession', input: 'none', summary: 'End one of the caller’s other sessions', errors: [404] },
  { kind: 'procedure', method: 'get', path: '/user/export', procedure: 'accounts.exportData', input: 'none', summary: 'Everything the service holds about the caller, as JSON (no secret or hash); not while impersonating', errors: [403] },
  { kind: 'procedure', method: 'get', path: '/security/events', procedure: 'accounts.securityEvents', input: 'query', summary: "The caller's activity log, newest first (`before`: an event's id, to page back)" },
  { kind: 'procedure', method: 'post', path: '/security/not-me', procedure: 'accounts.notMe', input: 'body', summary: '"This was not me" (a new-browser mail\'s link): end every session, revoke every application, mail a reset link', errors: [400] },
  // profiles, moderation, impersonation
  { kind: 'procedure', method: 'get', path: '/profiles', procedure: 'accounts.profiles', input: 'query', summary: 'The caller’s profile, or one by id or email (an id or email no profile holds, or a deleted profile’s: an empty list), several by `ids` (comma-separated), or by name', errors: [404] },
  { kind: 'procedure', method: 'post', path: '/profiles', procedure: 'accounts.updateProfile', input: 'body', summary: 'Edit a profile (the caller’s own; a super user’s any): a ProfileReference whose content replaces the editable fields; answers the Profile', errors: [403, 404] },
  { kind: 'procedure', method: 'get', path: '/profiles/search', procedure: 'accounts.searchProfiles', input: 'query', summary: 'A page of profiles (not deleted, merged or blocked) by a term, a full name, name parts, a tilde `id` or an `email` (confirmed, but the caller’s own and for moderators), and how many match (`count`); others’ emails shown as their domains (`****@example.org`); a moderator’s `trash` and `withBlocked` keep deleted and blocked ones in; `limit` and `offset` page' },
  { kind: 'procedure', method: 'post', path: '/profiles/search', procedure: 'accounts.searchProfilesBy', input: 'body', summary: 'Profiles by ids, or by the emails they hold' },
  { kind: 'procedure', method: 'post', path: '/profile/moderate', procedure: 'accounts.moderate', input: 'body', summary: 'A moderation decision on a profile', errors: [404] },
  { kind: 'procedure', method: 'put', path: '/impersonators', procedure: 'accounts.setImpersonators', input: 'body', summary: 'Super users: set who may impersonate a person (the impersonators of their own ~ group)', errors: [403, 404] },
  { kind: 'procedure', method: 'post', path: '/impersonate', procedure: 'accounts.impersonate', input: 'body', summary: 'Start a session as another person', errors: [404] },
  { kind: 'procedure', method: 'post', path: '/impersonate/exit', procedure: 'accounts.exitImpersonation', input: 'none', summary: "Return to the impersonator's own session (needs the impersonation session's refresh cookie)", errors: [403] },
  // venues, invitations, notes (not in the spec: see the README)
  { kind: 'procedure', method: 'post', path: '/venues', procedure: 'venue.createVenue', input: 'body', summary: 'Create a venue from its author-console config' },
  { kind: 'procedure', method: 'get', path: '/venues/*venueId/config', procedure: 'venue.venueConfig', input: 'none', summary: "A venue's author-console config", errors: [404] },
  { kind: 'procedure', method: 'get', path: '/venues/*venueId/author-console', procedure: 'venue.authorConsole', input: 'none', summary: "The caller's author console for a venue", errors: [404] },
  { kind: 'procedure', method: 'post', path: '/groups/members', procedure: 'venue.addMembers', input: 'body', summary: 'Add members to a venue group', errors: [404] },
  { kind: 'procedure', method: 'post', path: '/invitations', procedure: 'venue.saveInvitation', input: 'body', summary: 'Create or replace an invitation of a venue', errors: [404] },
  { kind: 'procedure', method: 'get', path: '/invitations', procedure: 'venue.invitations', input: 'query', summary: 'An invitation with its form', errors: [404] },
  { kind: 'procedure', method: 'post', path: '/notes', procedure: 'venue.postNote', input: 'body', summary: 'Post or edit a note under an invitation', errors: [404] },
  { kind: 'procedure', method: 'get', path: '/notes', procedure: 'venue.notes', input: 'query', summary: 'Notes the caller may read; by `id`, a missing note is a 404; lists wait their turn, a caller with 64 under way is told 429', errors: [403, 404, 429] },
  { kind: 'procedure', method: 'get', path: '/notes/edits', procedure: 'venue.noteEdits', input: 'query', summary: 'The revisions of a note, or one revision by id', errors: [404] },
  { kind: 'procedure', method: 'post', path: '/notes/edits', procedure: 'venue.postNoteEdit', input: 'body', summary: 'Post, revise or delete a note as an edit (the real platform’s way)', errors: [404] },
  { kind: 'procedure', method: 'delete', path: '/notes', procedure: 'venue.deleteNote', input: 'query-or-body', summary: 'Delete a note (`?id=`, or `{id}` as a JSON body)', errors: [404] },
  { kind: 'procedure', method: 'get', path: '/venues', procedure: 'venue.venues', input: 'query', summary: 'Venues by id, ids or the invitations they own' },
  { kind: 'procedure', method: 'get', path: '/logs/process', procedure: 'venue.processLogs', input: 'query', summary: 'How the processing of an edit went (edits here complete when posted)', errors: [404] },
  { kind: 'procedure', method: 'get', path: '/groups', procedure: 'venue.groups', input: 'query', summary: 'A group by id, the groups under a prefix or of a member, whose members the caller may see', errors: [404] },
  // attachments that answer JSON (uploads and downloads are streams: below)
  { kind: 'procedure', method: 'get', path: '/attachment/rules', procedure: 'attachments.uploadRules', input: 'query', summary: "What a file for an invitation's field must be" },
  { kind: 'procedure', method: 'get', path: '/attachment/chunk/status', procedure: 'attachments.chunkedUpload', input: 'query', summary: 'Where a chunked upload stands, to resume it', errors: [404] },
  { kind: 'procedure', method: 'get', path: '/pdf/compare', procedure: 'attachments.compare', input: 'query', summary: 'Two revisions of a note’s file field', errors: [404] },
  // the sign-in provider's JSON procedures (its protocol endpoints and pages are below)
  { kind: 'procedure', method: 'get', path: '/oidc/clients', procedure: 'oidc.clients', input: 'none', summary: 'Sign-in clients (operators see all)' },
  { kind: 'procedure', method: 'post', path: '/oidc/clients', procedure: 'oidc.addClient', input: 'body', summary: 'Register a sign-in client' },
  { kind: 'procedure', method: 'put', path: '/oidc/clients/:id', procedure: 'oidc.setClientStatus', input: 'body', summary: 'Approve or reject a sign-in client', errors: [404] },
  { kind: 'procedure', method: 'delete', path: '/oidc/clients/:id', procedure: 'oidc.removeClient', input: 'none', summary: 'Remove a sign-in client', errors: [404] },
  { kind: 'procedure', method: 'get', path: '/oidc/consents', procedure: 'oidc.consents', input: 'none', summary: 'The applications the caller has let sign them in' },
  { kind: 'procedure', method: 'delete', path: '/oidc/consents/:clientId', procedure: 'oidc.withdrawConsent', input: 'none', summary: 'Withdraw consent from an application', errors: [404] },
  { kind: 'procedure', method: 'post', path: '/oidc/authorize/confirm', procedure: 'oidc.confirmInteraction', input: 'body', summary: 'Continue a sign-in request as the signed-in person', errors: [404] },
  { kind: 'procedure', method: 'post', path: '/oidc/authorize/consent', procedure: 'oidc.consentInteraction', input: 'body', summary: 'Allow or deny a sign-in request', errors: [404] },
  // ---- streams: uploads (a multipart body read by the handler, an hour to arrive) and downloads ---
  { kind: 'stream', method: 'put', path: '/attachment', body: 'multipart', bodyDeadline: false, handler: 'upload', doc: STREAM_DOCS.upload },
  { kind: 'stream', method: 'put', path: '/attachment/chunk', body: 'multipart', bodyDeadline: false, handler: 'uploadChunk', doc: STREAM_DOCS.uploadChunk },
  { kind: 'stream', method: 'get', path: '/attachment', body: 'none', bodyDeadline: false, handler: 'attachment', doc: STREAM_DOCS.attachment },
  // tus 1.0 (`tus.ts`): another protocol, described in docs/attachments.md rather than the API document.
  { kind: 'stream', method: 'options', path: '/attachment/tus', body: 'none', handler: 'tusOptions' },
  { kind: 'stream', method: 'post', path: '/attachment/tus', body: 'octets', bodyDeadline: false, handler: 'tusCreate' },
  { kind: 'stream', method: 'options', path: '/attachment/tus/:id', body: 'none', handler: 'tusOptions' },
  { kind: 'stream', method: 'head', path: '/attachment/tus/:id', body: 'none', handler: 'tusHead' },
  { kind: 'stream', method: 'patch', path: '/attachment/tus/:id', body: 'octets', bodyDeadline: false, handler: 'tusPatch' },
  { kind: 'stream', method: 'delete', path: '/attachment/tus/:id', body: 'octets', handler: 'tusTerminate' },
  { kind: 'stream', method: 'get', path: '/pdf', handler: 'pdf', doc: STREAM_DOCS.pdf },
  { kind: 'stream', method: 'get', path: '/notes/edits/attachment', handler: 'editAttachment', doc: STREAM_DOCS.editAttachment },
  { kind: 'stream', method: 'get', path: '/groups/attachment', handler: 'groupAttachment', doc: STREAM_DOCS.groupAttachment },
  { kind: 'stream', method: 'get', path: '/invitations/attachment', handler: 'invitationAttachment', doc: STREAM_DOCS.invitationAttachment },
  { kind: 'stream', method: 'get', path: '/pdf/compare/view', handler: 'compareView', doc: STREAM_DOCS.compareView },
  { kind: 'stream', method: 'get', path: '/pdf/:id', handler: 'pdfById', doc: STREAM_DOCS.pdfById },
  // ---- the service --------------------------------------------------------------------------------
  { kind: 'health', method: 'get', path: '/health', handler: 'health', doc: SERVICE_DOCS.health },
  { kind: 'health', method: 'get', path: '/health/live', body: 'none', handler: 'healthLive', doc: SERVICE_DOCS.live },
  { kind: 'health', method: 'get', path: '/health/ready', body: 'none', handler: 'healthReady', doc: SERVICE_DOCS.ready },
  { kind: 'docs', method: 'get', path: '/openapi.json', cors: 'read-only', handler: 'apiDocument', doc: SERVICE_DOCS.apiDocument },
  { kind: 'docs', method: 'get', path: '/docs', handler: 'referencePage' },
  { kind: 'docs', method: 'get', path: '/docs/init.js', handler: 'referenceScript' },
  { kind: 'docs', method: 'get', path: '/docs/swagger-ui.css', handler: 'viewerCss' },
  { kind: 'docs', method: 'get', path: '/docs/swagger-ui-bundle.js', handler: 'viewerScript' },
  { kind: 'docs', method: 'get', path: '/docs/favicon-32x32.png', handler: 'viewerIcon' },
  { kind: 'trpc', method: 'any', path: '/trpc' },
  // ---- the sign-in provider: protocol endpoints (described by the discovery document) -------------
  // Discovery and the JWKS answer `OPTIONS` with what they allow, and a CORS preflight (a script
  // sending a header of its own) as the other protocol endpoints do.
  { kind: 'oauth', method: 'get', path: '/.well-known/openid-configuration', cors: 'protocol', handler: 'discovery' },
  { kind: 'allow', method: 'options', path: '/.well-known/openid-configuration', cors: 'protocol' },
  // The same document as OAuth 2.0 authorization server metadata (RFC 8414 §3), where OAuth clients look.
  { kind: 'oauth', method: 'get', path: '/.well-known/oauth-authorization-server', cors: 'protocol', handler: 'discovery' },
  { kind: 'allow', method: 'options', path: '/.well-known/oauth-authorization-server', cors: 'protocol' },
  { kind: 'oauth', method: 'get', path: '/oidc/jwks', cors: 'protocol', handler: 'jwks' },
  { kind: 'allow', method: 'options', path: '/oidc/jwks', cors: 'protocol' },
  { kind: 'oauth', method: 'post', path: '/oidc/token', body: 'form', cors: 'protocol', sameOrigin: false, handler: 'token', doc: PROTOCOL_DOCS.token },
  { kind: 'preflight', method: 'options', path: '/oidc/token', body: 'none', cors: 'protocol', sameOrigin: false },
  { kind: 'oauth', method: 'post', path: '/oidc/par', body: 'form', cors: 'protocol', sameOrigin: false, handler: 'pushedAuthorization', doc: PROTOCOL_DOCS.pushedAuthorization },
  { kind: 'preflight', method: 'options', path: '/oidc/par', body: 'none', cors: 'protocol', sameOrigin: false },
  { kind: 'oauth', method: 'post', path: '/oidc/device/auth', body: 'form', cors: 'protocol', sameOrigin: false, handler: 'deviceAuthorization', doc: PROTOCOL_DOCS.deviceAuthorization },
  { kind: 'preflight', method: 'options', path: '/oidc/device/auth', body: 'none', cors: 'protocol', sameOrigin: false },
  { kind: 'oauth', method: 'get', path: '/oidc/userinfo', body: 'none', cors: 'protocol', sameOrigin: false, handler: 'userinfo', doc: PROTOCOL_DOCS.userinfo },
  { kind: 'oauth', method: 'post', path: '/oidc/userinfo', body: 'form', cors: 'protocol', sameOrigin: false, handler: 'userinfo' },
  { kind: 'preflight', method: 'options', path: '/oidc/userinfo', body: 'none', cors: 'protocol', sameOrigin: false },
  { kind: 'oauth', method: 'post', path: '/oidc/revoke', body: 'form', cors: 'protocol', sameOrigin: false, handler: 'revoke', doc: PROTOCOL_DOCS.revoke },
  { kind: 'preflight', method: 'options', path: '/oidc/revoke', body: 'none', cors: 'protocol', sameOrigin: false },
  { kind: 'oauth', method: 'post', path: '/oidc/introspect', body: 'form', cors: 'protocol', sameOrigin: false, handler: 'introspect', doc: PROTOCOL_DOCS.introspect },
  { kind: 'preflight', method: 'options', path: '/oidc/introspect', body: 'none', cors: 'protocol', sameOrigin: false },
  // Registration is a server's act (an operator's token, then the app's back end): no CORS.
  { kind: 'oauth', method: 'post', path: '/oidc/register', sameOrigin: false, handler: 'register', doc: REGISTRATION_DOCS.register },
  { kind: 'oauth', method: 'get', path: '/oidc/register/:clientId', body: 'none', sameOrigin: false, handler: 'readRegistration', doc: REGISTRATION_DOCS.read },
  { kind: 'oauth', method: 'put', path: '/oidc/register/:clientId', sameOrigin: false, handler: 'updateRegistration', doc: REGISTRATION_DOCS.update },
  { kind: 'oauth', method: 'delete', path: '/oidc/register/:clientId', body: 'none', sameOrigin: false, handler: 'deleteRegistration', doc: REGISTRATION_DOCS.remove },
  // ---- the sign-in provider: pages (the authorization endpoint answers with a redirect or a page) -
  { kind: 'page', method: 'get', path: '/oidc/authorize', body: 'none', sameOrigin: false, handler: 'authorize' },
  { kind: 'page', method: 'post', path: '/oidc/authorize', body: 'form', sameOrigin: false, handler: 'authorize' },
  { kind: 'allow', method: 'options', path: '/oidc/authorize', body: 'none', sameOrigin: false },
  { kind: 'page', method: 'get', path: '/oidc/login', body: 'none', sameOrigin: false, handler: 'loginForm' },
  { kind: 'page', method: 'post', path: '/oidc/login', body: 'form', sameOrigin: false, handler: 'login' },
  { kind: 'allow', method: 'options', path: '/oidc/login', body: 'none', sameOrigin: false },
  { kind: 'page', method: 'post', path: '/oidc/login/passkey', body: 'form', sameOrigin: false, handler: 'loginPasskey' },
  { kind: 'allow', method: 'options', path: '/oidc/login/passkey', body: 'none', sameOrigin: false },
  { kind: 'page', method: 'get', path: '/oidc/consent', body: 'none', sameOrigin: false, handler: 'consentForm' },
  { kind: 'page', method: 'post', path: '/oidc/consent', body: 'form', sameOrigin: false, handler: 'consent' },
  { kind: 'allow', method: 'options', path: '/oidc/consent', body: 'none', sameOrigin: false },
  { kind: 'page', method: 'get', path: '/oidc/logout', body: 'none', sameOrigin: false, handler: 'endSession', doc: PROTOCOL_DOCS.endSession },
  { kind: 'page', method: 'post', path: '/oidc/logout', body: 'form', sameOrigin: false, handler: 'endSession', doc: PROTOCOL_DOCS.endSessionForm },
  { kind: 'page', method: 'post', path: '/oidc/logout/confirm', body: 'form', sameOrigin: false, handler: 'confirmEndSession' },
  { kind: 'allow', method: 'options', path: '/oidc/logout', body: 'none', sameOrigin: false },
  { kind: 'page', method: 'get', path: '/oidc/pages.css', handler: 'stylesheet' },
  { kind: 'allow', method: 'options', path: '/oidc/pages.css' },
  // ---- the account pages (`server/web/`): WEB_URL's default. Forms carry CSRF tokens bound to the
  // browser (`server/web/csrf.ts`) instead of the same-origin rule, which refuses form bodies ----
  accountPage('/', 'webRoot'),
  accountPage('/account', 'webHome'),
  accountPage('/account/pages.css', 'webStylesheet'),
  // The pages' stylesheet and script by their content's hash, cached for a year (`server/web/assets.ts`).
  accountPage('/assets/:file', 'webAsset'),
  accountPage('/account/device', 'webDeviceForm'),
  accountForm('/account/device', 'webDevice'),
  accountPage('/account/signup', 'webSignupForm'),
  accountForm('/account/signup', 'webSignup'),
  accountPage('/account/check-mail', 'webCheckMail'),
  accountForm('/account/check-mail/resend', 'webResendMail'),
  accountPage('/account/profile', 'webProfileForm'),
  accountForm('/account/profile', 'webProfile'),
  accountPage('/account/profile/activate', 'webActivateForm'),
  accountForm('/account/profile/activate', 'webActivate'),
  accountForm('/account/profile/activate/resend', 'webActivateResend'),
  accountPage('/account/profile/activate/code', 'webActivationCodeForm'),
  accountForm('/account/profile/activate/code', 'webActivationCode'),
  accountPage('/account/confirm', 'webConfirmForm'),
  accountForm('/account/confirm', 'webConfirm'),
  accountPage('/account/reset', 'webResetRequestForm'),
  accountForm('/account/reset', 'webResetRequest'),
  accountPage('/account/user/password', 'webResetForm'),
  accountForm('/account/user/password', 'webReset'),
  accountForm('/account/user/password/resend', 'webResetResend'),
  accountPage('/account/login', 'webLoginForm'),
  accountForm('/account/login', 'webLogin'),
  accountForm('/account/login/passkey', 'webLoginPasskey'),
  accountForm('/account/logout', 'webLogout'),
  accountPage('/account/security', 'webSecurity'),
  accountPage('/account/security/password', 'webSecurityPassword'),
  accountPage('/account/security/two-step', 'webSecurityTwoStep'),
  accountPage('/account/security/passkeys', 'webSecurityPasskeys'),
  accountPage('/account/security/sessions', 'webSecuritySessions'),
  accountPage('/account/security/apps', 'webSecurityApps'),
  accountPage('/account/security/activity', 'webSecurityActivity'),
  accountPage('/account/security/not-me', 'webNotMeForm'),
  accountForm('/account/security/not-me', 'webNotMe'),
  // emails and your data (issue 27: `server/web/pages/emails.ts`, `data.ts`)
  accountPage('/account/emails', 'webEmails'),
  accountForm('/account/emails/add', 'webEmailsAdd'),
  accountForm('/account/emails/remove', 'webEmailsRemove'),
  accountForm('/account/emails/preferred', 'webEmailsPreferred'),
  accountPage('/account/emails/undo', 'webEmailUndoForm'),
  accountForm('/account/emails/undo', 'webEmailUndo'),
  accountPage('/account/data', 'webData'),
  accountPage('/account/data/export', 'webDataExport'),
  accountForm('/account/data/delete', 'webDeleteAccount'),
  accountForm('/account/security/password', 'webChangePassword'),
  // The old "Add an email" form's path: the emails page's handler (issue 27).
  accountForm('/account/security/emails', 'webEmailsAdd'),
  accountForm('/account/security/sessions/end', 'webEndSession'),
  accountForm('/account/security/sessions/end-others', 'webEndOtherSessions'),
  accountForm('/account/security/applications/revoke', 'webRevokeApplication'),
  accountForm('/account/security/applications/register', 'webRegisterApplication'),
  accountPage('/account/security/confirm', 'webConfirmIdentityForm'),
  accountForm('/account/security/mfa/preferred', 'webMfaPreferred'),
  accountForm('/account/security/mfa/totp/setup', 'webTotpSetup'),
  accountForm('/account/security/mfa/totp/verify', 'webTotpVerify'),
  accountForm('/account/security/mfa/totp/off', 'webTotpOff'),
  accountForm('/account/security/mfa/email/on', 'webEmailOn'),
  accountForm('/account/security/mfa/email/off', 'webEmailOff'),
  accountForm('/account/security/mfa/passkeys/add', 'webPasskeyAdd'),
  accountForm('/account/security/mfa/passkeys/remove', 'webPasskeyRemove'),
  accountForm('/account/security/mfa/recovery-codes', 'webRecoveryCodes'),
  accountForm('/account/security/mfa/trusted-devices/forget', 'webForgetDevices'),
  accountForm('/account/security/confirm', 'webConfirmIdentity'),
  // ---- passkeys in our pages: the browser library, our script, the Python client's passkey step --
  { kind: 'page', method: 'get', path: '/webauthn/browser.js', handler: 'webauthnBrowserScript' },
  { kind: 'page', method: 'get', path: '/webauthn/passkey.js', handler: 'passkeyScript' },
  { kind: 'page', method: 'get', path: '/mfa/webauthn-auth', body: 'none', handler: 'webauthnAuthPage', doc: PAGE_DOCS.webauthnAuth },
];
