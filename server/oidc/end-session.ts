import type { Viewer } from '../accounts/viewer.ts';
import { InvalidRequest } from './errors.ts';
import { usable } from './flow.ts';
import { checkIdTokenHint } from './id-token-hint.ts';
import { checkOnce, sent, STATE_MAX, subjectOf, type Provider } from './provider.ts';
import type { ClientRecord } from './repository.ts';

/** RP-initiated logout's parameters (OpenID Connect RP-Initiated Logout 1.0 §2); each may be sent once. */
const END_SESSION_PARAMETERS = ['id_token_hint', 'post_logout_redirect_uri', 'state', 'client_id', 'logout_hint', 'ui_locales'];

/** What the end-session endpoint does with a request. */
export interface EndSession {
  /** Ask the person first: the request does not show that the session it would end is theirs. */
  confirm: boolean;
  client: ClientRecord | null;
  /** Where to send the browser afterwards: a registered `post_logout_redirect_uri`, with `state`; null: the "signed out" page. */
  redirect: string | null;
}

/**
 * `/oidc/logout` (RP-Initiated Logout 1.0): the named checks below, in order; their errors are
 * pages, never a redirect (an unregistered `post_logout_redirect_uri` is never redirected to).
 * With an `id_token_hint` naming the person signed in, the session ends at once; without one
 * (or with one naming someone else, or in an impersonation), the person is asked first.
 */
export async function endSession(provider: Provider, params: Record<string, unknown>, viewer: Viewer | null): Promise<EndSession> {
  const param = (name: string) => sent(params, name);
  checkOnce(params, END_SESSION_PARAMETERS, { allowRedirect: false });
  const hint = await checkIdTokenHint(provider, param('id_token_hint'), { allowRedirect: false });
  const client = await checkClient(provider, hint?.aud, param('client_id'));
  const redirect = checkPostLogoutRedirect(client, param('post_logout_redirect_uri'), param('state'));
  // Only a hint naming the person of a usable browser session ends it at once: an impersonation
  // (never usable here) is asked too, or any link could end a support session.
  const person = usable(viewer);
  const hinted = person !== null && hint !== null && client !== null && hint.sub === subjectOf(provider, client, person.profileId);
  const confirm = viewer !== null && !hinted;
  return { confirm, client, redirect };
}

/** checkClient: the client the hint was issued to, or `client_id`; both given, they must agree. */
async function checkClient(provider: Provider, fromHint: string | undefined, clientId: string | undefined): Promise<ClientRecord | null> {
  if (fromHint !== undefined && clientId !== undefined && fromHint !== clientId) {
    throw new InvalidRequest('client_id is not the client the id_token_hint was issued to', { allowRedirect: false });
  }
  const id = fromHint ?? clientId;
  if (id === undefined) return null;
  const client = await provider.clients.find(id);
  if (!client) throw new InvalidRequest('Invalid client_id', { allowRedirect: false });
  return client;
}

/** checkPostLogoutRedirect: exactly one of the client's registered `post_logout_redirect_uris`. */
function checkPostLogoutRedirect(client: ClientRecord | null, uri: string | undefined, state: string | undefined): string | null {
  if (uri === undefined) return null;
  if (!client) throw new InvalidRequest('post_logout_redirect_uri needs client_id or id_token_hint', { allowRedirect: false });
  if (!client.postLogoutRedirectUris.includes(uri)) throw new InvalidRequest('post_logout_redirect_uri is not registered for this client', { allowRedirect: false });
  if (state !== undefined && state.length > STATE_MAX) throw new InvalidRequest(`state must be at most ${STATE_MAX} characters`, { allowRedirect: false });
  const url = new URL(uri);
  if (state !== undefined) url.searchParams.set('state', state);
  return url.toString();
}
