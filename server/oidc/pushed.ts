import type { z } from 'zod';
import type { PushedAuthorizationForm } from '../../shared/index.ts';
import { hashSecret, randomToken } from '../secrets.ts';
import { AUTHORIZATION_PARAMETERS, checkRequest, REQUEST_URI_PREFIX } from './authorize.ts';
import { approvedClient, CLIENT_PARAMETERS, type ClientProof } from './client-auth.ts';
import { InvalidRequest } from './errors.ts';
import { checkOnce, sent, type Provider } from './provider.ts';

// Pushed authorization requests (RFC 9126): a client sends its authorization request to
// `/oidc/par` first, authenticated as at the token endpoint, and sends the browser to the
// authorization endpoint with the `request_uri` it was answered. The request's parameters never
// pass through the browser, and a confidential client's are known to come from it.

/** How long a pushed request waits for its use, in seconds (node-oidc-provider's 60). */
export const PUSHED_SECONDS = 60;

/** What is kept of a pushed request: the authorization request's parameters, never the client's credentials. */
const KEPT = ['redirect_uri', ...AUTHORIZATION_PARAMETERS] as const;
// Every parameter kept is one the API document describes (`request` and `request_uri` are refused here).
KEPT satisfies ReadonlyArray<keyof z.infer<typeof PushedAuthorizationForm> | 'request' | 'request_uri'>;

/**
 * `POST /oidc/par` (RFC 9126 §2): the client proves itself (`invalid_client`, 401; a `client_id`
 * in the body must be the one authenticated), and its request passes every check the
 * authorization endpoint makes (`checkRequest`), each error answered as JSON. A `request_uri`
 * in it is `invalid_request`. Answers 201 with the `request_uri` for one use within
 * `PUSHED_SECONDS`; the checks run again when it is used.
 */
export async function pushAuthorizationRequest(provider: Provider, form: Record<string, unknown>, proof: Omit<ClientProof, 'form'>): Promise<{ request_uri: string; expires_in: number }> {
  checkOnce(form, [...CLIENT_PARAMETERS, ...KEPT], { allowRedirect: false });
  const client = await approvedClient(provider, { form, ...proof });
  // RFC 9126 §2.1: `request_uri` must not be sent here (`invalid_request`, as node-oidc-provider answers).
  if (sent(form, 'request_uri') !== undefined) throw new InvalidRequest('request_uri must not be used at the pushed authorization request endpoint');
  const kept: Record<string, string> = {};
  for (const name of KEPT) {
    const value = sent(form, name);
    if (value !== undefined) kept[name] = value;
  }
  await checkRequest(provider, client, kept, { pushed: true });
  const requestUri = `${REQUEST_URI_PREFIX}${randomToken()}`;
  const now = provider.now();
  await provider.repo.pushed.insert(hashSecret(requestUri), client.id, kept, now, now + PUSHED_SECONDS * 1000);
  return { request_uri: requestUri, expires_in: PUSHED_SECONDS };
}
