import type { AnyProcedure } from '@trpc/server';
import type { Request } from 'express';
import { AppError } from '../../shared/errors.ts';
import type { AppRouter, createCaller } from '../router.ts';

type Caller = ReturnType<typeof createCaller>;

type PathsOf<T, Prefix extends string = ''> = {
  [K in keyof T & string]: T[K] extends AnyProcedure ? `${Prefix}${K}` : PathsOf<T[K], `${Prefix}${K}.`>;
}[keyof T & string];

/** Every procedure of the router by its dotted path, e.g. `accounts.login`. */
export type ProcedurePath = PathsOf<AppRouter['_def']['record']>;

/**
 * One REST route: its method and path, the procedure it calls, and where that procedure's
 * input comes from. The API document (`openapi.ts`) is built from the same entry and the
 * procedure's own input and output schemas, so the route and its description cannot drift.
 */
export interface Route {
  method: 'get' | 'post' | 'put' | 'delete';
  /** Express syntax: `:name` is one segment, `*name` (a venue id) may span several. */
  path: string;
  procedure: ProcedurePath;
  /**
   * The JSON body, the query string, or nothing; the path's parameters are added to it.
   * `query-or-body`: the JSON body when one was sent, else the query string (a `DELETE` that
   * clients send either way); the API document shows the query form.
   */
  input: 'body' | 'query' | 'query-or-body' | 'none';
  /** The input property each path parameter fills, when it is not named the same. */
  rename?: Record<string, string>;
  /** One line for the API document. */
  summary: string;
  /** Error statuses besides those every route may answer (see `openapi.ts`). */
  errors?: number[];
}

/** The path's parameters by their input names; a venue id's segments are joined again. */
function pathParams(route: Route, req: Request): Record<string, string> {
  const params: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.params as Record<string, string | string[]>)) {
    params[route.rename?.[name] ?? name] = Array.isArray(value) ? value.join('/') : String(value);
  }
  return params;
}

/**
 * The procedure's input: the body or the query string with the path parameters added. A body
 * that already has such a key is refused, so a path parameter cannot be smuggled in through
 * the body. The procedure's schema checks the rest, exactly as for a tRPC call.
 */
function routeInput(route: Route, req: Request): unknown {
  const params = pathParams(route, req);
  const body: unknown = req.body;
  const sentBody = body !== undefined && !(typeof body === 'object' && body !== null && !Array.isArray(body) && Object.keys(body).length === 0);
  const source: unknown = route.input === 'body' || (route.input === 'query-or-body' && sentBody) ? body : route.input === 'none' ? undefined : req.query;
  if (Object.keys(params).length === 0) return source;
  if (source === undefined) return params;
  if (source === null || typeof source !== 'object' || Array.isArray(source)) return source;
  for (const key of Object.keys(params)) {
    if (key in source) throw new AppError('AdditionalPropertiesError', `The property ${key} must NOT be present`, { path: key });
  }
  return { ...source, ...params };
}

/** Calls the route's procedure through the caller: the same code path as a tRPC client's call. */
export function callRoute(caller: Caller, route: Route, req: Request): Promise<unknown> {
  let target: unknown = caller;
  for (const key of route.procedure.split('.')) target = (target as Record<string, unknown>)[key];
  const procedure = target as (input?: unknown) => Promise<unknown>;
  return route.input === 'none' && Object.keys(req.params).length === 0 ? procedure() : procedure(routeInput(route, req));
}

/**
 * The REST route table: every JSON path the spec (and the README's additions) define, one line
 * each. Streams (uploads, downloads) are in `files.ts`, the OpenID Connect protocol in `oidc.ts`.
 * Paths are literal, or have one named parameter (a venue id may span segments), and no two
 * routes match the same path, so order never matters.
 */
export const routes: Route[] = [
  // sign-up and activation (503: the human-verification service did not answer)
  { method: 'post', path: '/register', procedure: 'accounts.register', input: 'body', summary: 'Sign up: sends the activation mail', errors: [429, 503] },
  { method: 'get', path: '/activatable/:token', procedure: 'accounts.activatable', input: 'none', summary: 'The account an activation token is for', errors: [404] },
  { method: 'put', path: '/activate/:token', procedure: 'accounts.activate', input: 'body', summary: 'Activate an account from its token; starts a session', errors: [404] },
  { method: 'post', path: '/activatable', procedure: 'accounts.resendActivation', input: 'body', summary: 'Send the activation mail again', errors: [404, 429] },
  { method: 'get', path: '/tildeusername', procedure: 'accounts.tildeUsername', input: 'query', summary: 'The next free tilde username for a name' },
  // sessions
  { method: 'post', path: '/login', procedure: 'accounts.login', input: 'body', summary: 'Sign in: sets the session cookies', errors: [429] },
  { method: 'post', path: '/refreshToken', procedure: 'accounts.refreshToken', input: 'none', summary: 'A new access token from the refresh cookie', errors: [401] },
  { method: 'post', path: '/logout', procedure: 'accounts.logout', input: 'none', summary: 'End this session' },
  { method: 'post', path: '/logout-all-devices', procedure: 'accounts.logoutOtherDevices', input: 'none', summary: 'End every other session of this person' },
  // passwords and emails
  { method: 'post', path: '/resettable', procedure: 'accounts.requestReset', input: 'body', summary: 'Send a password-reset mail', errors: [404, 429, 503] },
  { method: 'get', path: '/resettable/:token', procedure: 'accounts.resettable', input: 'none', summary: 'The account a reset token is for', errors: [404] },
  { method: 'put', path: '/reset/:token', procedure: 'accounts.resetPassword', input: 'body', summary: 'Choose a new password from a reset token', errors: [404, 429] },
  { method: 'post', path: '/user/confirm', procedure: 'accounts.confirmEmail', input: 'body', summary: 'Add an email: sends a confirmation mail', errors: [429] },
  { method: 'post', path: '/user/confirm/:token', procedure: 'accounts.confirmEmail', input: 'body', rename: { token: 'activationToken' }, summary: 'Add an email to an account being activated', errors: [404, 429] },
  { method: 'put', path: '/activatelink', procedure: 'accounts.activateLink', input: 'body', summary: 'Confirm an email with its code', errors: [404, 429] },
  { method: 'put', path: '/activatelink/:token', procedure: 'accounts.activateLink', input: 'body', rename: { token: 'activationToken' }, summary: 'Confirm an email of an account being activated', errors: [404, 429] },
  // profiles, moderation, impersonation
  { method: 'get', path: '/profiles', procedure: 'accounts.profiles', input: 'query', summary: 'The caller’s profile, or one by id or email (an unknown email: an empty list), or by name', errors: [404] },
  { method: 'get', path: '/profiles/search', procedure: 'accounts.searchProfiles', input: 'query', summary: 'Active profiles by a term, a full name or name parts' },
  { method: 'post', path: '/profiles/search', procedure: 'accounts.searchProfilesBy', input: 'body', summary: 'Profiles by ids, or by the emails they hold' },
  { method: 'post', path: '/profile/moderate', procedure: 'accounts.moderate', input: 'body', summary: 'A moderation decision on a profile', errors: [404] },
  { method: 'post', path: '/impersonate', procedure: 'accounts.impersonate', input: 'body', summary: 'Start a session as another person', errors: [404] },
  { method: 'post', path: '/impersonate/exit', procedure: 'accounts.exitImpersonation', input: 'none', summary: "Return to the impersonator's own session (needs the impersonation session's refresh cookie)", errors: [403] },
  // venues, invitations, notes (not in the spec: see the README)
  { method: 'post', path: '/venues', procedure: 'venue.createVenue', input: 'body', summary: 'Create a venue from its author-console config' },
  { method: 'get', path: '/venues/*venueId/config', procedure: 'venue.venueConfig', input: 'none', summary: "A venue's author-console config", errors: [404] },
  { method: 'get', path: '/venues/*venueId/author-console', procedure: 'venue.authorConsole', input: 'none', summary: "The caller's author console for a venue", errors: [404] },
  { method: 'post', path: '/groups/members', procedure: 'venue.addMembers', input: 'body', summary: 'Add members to a venue group', errors: [404] },
  { method: 'post', path: '/invitations', procedure: 'venue.saveInvitation', input: 'body', summary: 'Create or replace an invitation of a venue', errors: [404] },
  { method: 'get', path: '/invitations', procedure: 'venue.invitations', input: 'query', summary: 'An invitation with its form', errors: [404] },
  { method: 'post', path: '/notes', procedure: 'venue.postNote', input: 'body', summary: 'Post or edit a note under an invitation', errors: [404] },
  { method: 'get', path: '/notes', procedure: 'venue.notes', input: 'query', summary: 'Notes the caller may read; by `id`, a missing note is a 404', errors: [403, 404] },
  { method: 'get', path: '/notes/edits', procedure: 'venue.noteEdits', input: 'query', summary: 'The revisions of a note, or one revision by id', errors: [404] },
  { method: 'post', path: '/notes/edits', procedure: 'venue.postNoteEdit', input: 'body', summary: 'Post, revise or delete a note as an edit (the real platform’s way)', errors: [404] },
  { method: 'delete', path: '/notes', procedure: 'venue.deleteNote', input: 'query-or-body', summary: 'Delete a note (`?id=`, or `{id}` as a JSON body)', errors: [404] },
  { method: 'get', path: '/venues', procedure: 'venue.venues', input: 'query', summary: 'Venues by id, ids or the invitations they own' },
  { method: 'get', path: '/logs/process', procedure: 'venue.processLogs', input: 'query', summary: 'How the processing of an edit went (edits here complete when posted)', errors: [404] },
  { method: 'get', path: '/groups', procedure: 'venue.groups', input: 'query', summary: 'A group by id, or the groups of a member, that the caller may read', errors: [404] },
  // attachments that answer JSON (uploads and downloads are streams: see files.ts)
  { method: 'get', path: '/attachment/rules', procedure: 'attachments.uploadRules', input: 'query', summary: "What a file for an invitation's field must be" },
  { method: 'get', path: '/attachment/chunk/status', procedure: 'attachments.chunkedUpload', input: 'query', summary: 'Where a chunked upload stands, to resume it', errors: [404] },
  { method: 'get', path: '/pdf/compare', procedure: 'attachments.compare', input: 'query', summary: 'Two revisions of a note’s file field', errors: [404] },
  // the sign-in provider's JSON procedures (the protocol endpoints and pages are in oidc.ts)
  { method: 'get', path: '/oidc/clients', procedure: 'oidc.clients', input: 'none', summary: 'Sign-in clients (operators see all)' },
  { method: 'post', path: '/oidc/clients', procedure: 'oidc.addClient', input: 'body', summary: 'Register a sign-in client' },
  { method: 'put', path: '/oidc/clients/:id', procedure: 'oidc.setClientStatus', input: 'body', summary: 'Approve or reject a sign-in client', errors: [404] },
  { method: 'delete', path: '/oidc/clients/:id', procedure: 'oidc.removeClient', input: 'none', summary: 'Remove a sign-in client', errors: [404] },
  { method: 'get', path: '/oidc/consents', procedure: 'oidc.consents', input: 'none', summary: 'The applications the caller has let sign them in' },
  { method: 'delete', path: '/oidc/consents/:clientId', procedure: 'oidc.withdrawConsent', input: 'none', summary: 'Withdraw consent from an application', errors: [404] },
  { method: 'post', path: '/oidc/authorize/confirm', procedure: 'oidc.confirmInteraction', input: 'body', summary: 'Continue a sign-in request as the signed-in person', errors: [404] },
  { method: 'post', path: '/oidc/authorize/consent', procedure: 'oidc.consentInteraction', input: 'body', summary: 'Allow or deny a sign-in request', errors: [404] },
];
