import type { Request } from 'express';
import { AppError } from '../../shared/errors.ts';
import type { createCaller } from '../router.ts';

type Caller = ReturnType<typeof createCaller>;

/** One REST route: its method and path, and the procedure it calls with the input it builds. */
export interface Route {
  method: 'get' | 'post' | 'put' | 'delete';
  path: string;
  /** Builds the procedure's input from the request and calls the same procedure a tRPC client would. */
  call(caller: Caller, req: Request): Promise<unknown>;
}

/**
 * The body with the path parameters added under their procedure names. A body that already
 * has such a key is refused, so a path parameter cannot be smuggled in through the body.
 */
// Typed `never` so it can stand for any procedure's input: the procedure's schema checks it.
function withPath(body: unknown, params: Record<string, string>): never {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body as never;
  for (const key of Object.keys(params)) {
    if (key in body) throw new AppError('AdditionalPropertiesError', `The property ${key} must NOT be present`, { path: key });
  }
  return { ...body, ...params } as never;
}

const token = (req: Request): string => String(req.params.token);
/** The query string, typed `never` so it can stand for any procedure's input: the procedure's schema checks it. */
const query = (req: Request): never => req.query as never;
/** A venue id holds slashes (`Conf.org/2027`): it is the wildcard's segments joined again. */
const venueId = (req: Request): string => {
  const segments: unknown = req.params.venueId;
  return Array.isArray(segments) ? segments.join('/') : String(segments);
};

/**
 * The REST route table: every JSON path the spec (and the README's additions) define, one line
 * each. Streams (uploads, downloads) are in `files.ts`, the OpenID Connect protocol in `oidc.ts`.
 * Paths are literal, or have one named parameter (a venue id may span segments), and no two
 * routes match the same path, so order never matters.
 */
export const routes: Route[] = [
  // sign-up and activation
  { method: 'post', path: '/register', call: (c, req) => c.accounts.register(req.body) },
  { method: 'get', path: '/activatable/:token', call: (c, req) => c.accounts.activatable({ token: token(req) }) },
  { method: 'put', path: '/activate/:token', call: (c, req) => c.accounts.activate(withPath(req.body, { token: token(req) })) },
  { method: 'post', path: '/activatable', call: (c, req) => c.accounts.resendActivation(req.body) },
  { method: 'get', path: '/tildeusername', call: (c, req) => c.accounts.tildeUsername(query(req)) },
  // sessions
  { method: 'post', path: '/login', call: (c, req) => c.accounts.login(req.body) },
  { method: 'post', path: '/refreshToken', call: (c) => c.accounts.refreshToken() },
  { method: 'post', path: '/logout', call: (c) => c.accounts.logout() },
  { method: 'post', path: '/logout-all-devices', call: (c) => c.accounts.logoutOtherDevices() },
  // passwords and emails
  { method: 'post', path: '/resettable', call: (c, req) => c.accounts.requestReset(req.body) },
  { method: 'get', path: '/resettable/:token', call: (c, req) => c.accounts.resettable({ token: token(req) }) },
  { method: 'put', path: '/reset/:token', call: (c, req) => c.accounts.resetPassword(withPath(req.body, { token: token(req) })) },
  { method: 'post', path: '/user/confirm', call: (c, req) => c.accounts.confirmEmail(req.body) },
  { method: 'post', path: '/user/confirm/:token', call: (c, req) => c.accounts.confirmEmail(withPath(req.body, { activationToken: token(req) })) },
  { method: 'put', path: '/activatelink', call: (c, req) => c.accounts.activateLink(req.body) },
  { method: 'put', path: '/activatelink/:token', call: (c, req) => c.accounts.activateLink(withPath(req.body, { activationToken: token(req) })) },
  // profiles, moderation, impersonation
  { method: 'get', path: '/profiles', call: (c, req) => c.accounts.profiles(query(req)) },
  { method: 'post', path: '/profile/moderate', call: (c, req) => c.accounts.moderate(req.body) },
  { method: 'post', path: '/impersonate', call: (c, req) => c.accounts.impersonate(req.body) },
  { method: 'post', path: '/impersonate/exit', call: (c) => c.accounts.exitImpersonation() },
  // venues, invitations, notes (not in the spec: see the README)
  { method: 'post', path: '/venues', call: (c, req) => c.venue.createVenue(req.body) },
  { method: 'get', path: '/venues/*venueId/config', call: (c, req) => c.venue.venueConfig({ venueId: venueId(req) }) },
  { method: 'get', path: '/venues/*venueId/author-console', call: (c, req) => c.venue.authorConsole({ venueId: venueId(req) }) },
  { method: 'post', path: '/groups/members', call: (c, req) => c.venue.addMembers(req.body) },
  { method: 'post', path: '/invitations', call: (c, req) => c.venue.saveInvitation(req.body) },
  { method: 'get', path: '/invitations', call: (c, req) => c.venue.invitations(query(req)) },
  { method: 'post', path: '/notes', call: (c, req) => c.venue.postNote(req.body) },
  { method: 'get', path: '/notes', call: (c, req) => c.venue.notes(query(req)) },
  { method: 'get', path: '/notes/edits', call: (c, req) => c.venue.noteEdits(query(req)) },
  // attachments that answer JSON (uploads and downloads are streams: see files.ts)
  { method: 'get', path: '/pdf/compare', call: (c, req) => c.attachments.compare(query(req)) },
  // the sign-in provider's JSON procedures (the protocol endpoints and pages are in oidc.ts)
  { method: 'get', path: '/oidc/clients', call: (c) => c.oidc.clients() },
  { method: 'post', path: '/oidc/clients', call: (c, req) => c.oidc.addClient(req.body) },
  { method: 'put', path: '/oidc/clients/:id', call: (c, req) => c.oidc.setClientStatus(withPath(req.body, { id: String(req.params.id) })) },
  { method: 'delete', path: '/oidc/clients/:id', call: (c, req) => c.oidc.removeClient({ id: String(req.params.id) }) },
  { method: 'get', path: '/oidc/consents', call: (c) => c.oidc.consents() },
  { method: 'delete', path: '/oidc/consents/:clientId', call: (c, req) => c.oidc.withdrawConsent({ clientId: String(req.params.clientId) }) },
  { method: 'post', path: '/oidc/authorize/confirm', call: (c, req) => c.oidc.confirmInteraction(req.body) },
  { method: 'post', path: '/oidc/authorize/consent', call: (c, req) => c.oidc.consentInteraction(req.body) },
];
