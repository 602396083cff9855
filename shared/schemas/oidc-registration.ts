import { z } from 'zod';
import { AssertionAlgorithm, DEVICE_CODE_GRANT, OidcAuthMethod, OidcGrantType, OidcScope, OidcSubjectType } from './oidc.ts';

/** Hosts a native application's loopback redirect may name (RFC 8252 §7.3), besides https anywhere. */
const LOOPBACK = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * Why a redirect or sign-out address cannot be registered, or null when it can: an absolute URL
 * compared as an exact string later (but for the port of a native application's http loopback IP
 * literal, RFC 8252 §7.3: `server/oidc/authorize.ts`), so no fragment (RFC 6749 §3.1.2) and no wildcard; https, or
 * http on the loopback interface (RFC 8252 §7.3); a native application may also use a private
 * scheme named after a domain it owns (`com.example.app:/callback`, RFC 8252 §7.1).
 */
export function redirectUriProblem(uri: string, applicationType: 'web' | 'native'): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'is not an absolute URL';
  }
  if (uri.includes('#')) return 'must not have a fragment';
  if (uri.includes('*')) return 'must not have a wildcard: each address is registered exactly';
  if (url.username !== '' || url.password !== '') return 'must not carry a user name or password';
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:') return LOOPBACK.has(url.hostname) ? null : 'must use https (plain http only on the loopback interface, 127.0.0.1 or [::1])';
  if (applicationType === 'native' && /^[a-z][a-z0-9+-]*\.[a-z0-9+.-]+:$/.test(url.protocol) && !/^(javascript|data|vbscript|file):$/.test(url.protocol)) return null;
  return 'must use https, or http on the loopback interface';
}

/**
 * An IPv4 or IPv6 literal of a private network (RFC 1918, RFC 4193). Not the link-local ranges,
 * where cloud machines answer their metadata service.
 */
function privateAddress(hostname: string): boolean {
  const v4 = /^(\d+)\.(\d+)\.\d+\.\d+$/.exec(hostname);
  if (v4) {
    const [a, b] = [Number(v4[1]), Number(v4[2])];
    return a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168);
  }
  return /^\[f[cd][0-9a-f]{2}:/i.test(hostname);
}

/**
 * Why a back-channel logout address cannot be registered, or null when it can. It is called by
 * the service itself, never by a browser, and an install's applications often live beside it:
 * besides https anywhere, plain http is accepted on the loopback interface and on a private
 * network's address (10/8, 172.16/12, 192.168/16, fc00::/7), written as an address. A host
 * name over plain http is not: what it resolves to is not known at registration (a name of one
 * label may be a cloud's metadata service).
 */
export function backchannelUriProblem(uri: string): string | null {
  const problem = redirectUriProblem(uri, 'web');
  if (problem === null) return null;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return problem;
  }
  if (url.protocol !== 'http:' || uri.includes('#') || uri.includes('*') || url.username !== '' || url.password !== '') return problem;
  if (privateAddress(url.hostname)) return null;
  return 'must use https (plain http only on the loopback interface or a private network address)';
}

/** Members of a JSON Web Key that only its owner may hold (RFC 7518 §6.2.2, §6.3.2, §6.4). */
const PRIVATE_KEY_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

const Uri = z.string().min(1).max(2000);
/** A page a person may be shown or sent to (the client's site, logo, policy, terms): an http(s) address. */
const WebPage = z.url({ protocol: /^https?$/, error: 'must be an http or https address' }).max(2000);

/**
 * A client's metadata as an application registers it (RFC 7591 §2, OpenID Connect Dynamic
 * Client Registration §2, Back-Channel Logout §2.2, RP-Initiated Logout §3.1), with their
 * defaults. Unknown fields are ignored, as RFC 7591 §2 asks. `refresh_token_absolute_seconds`
 * and `refresh_token_idle_seconds` are this provider's own: how long the client's refresh-token
 * families live at most and unused (the install's defaults otherwise).
 */
const ClientMetadataFields = z.object({
    // Required with the authorization_code grant (below); a device-only client has none.
    redirect_uris: z.array(Uri).max(20).default([]),
    application_type: z.enum(['web', 'native']).default('web'),
    client_name: z.string().min(1).max(200).optional(),
    token_endpoint_auth_method: OidcAuthMethod.default('client_secret_basic'),
    token_endpoint_auth_signing_alg: AssertionAlgorithm.optional(),
    grant_types: z.array(OidcGrantType).min(1).default(['authorization_code']),
    // `code` exactly when the client has the authorization_code grant (RFC 7591 §2.1), its default then.
    response_types: z.array(z.literal('code')).max(1).optional(),
    scope: z.string().max(1000).optional(),
    jwks: z.strictObject({ keys: z.array(z.record(z.string(), z.unknown())).min(1).max(20) }).optional(),
    jwks_uri: Uri.optional(),
    subject_type: OidcSubjectType.default('public'),
    sector_identifier_uri: Uri.optional(),
    id_token_signed_response_alg: z.literal('RS256').default('RS256'),
    post_logout_redirect_uris: z.array(Uri).max(20).default([]),
    backchannel_logout_uri: Uri.optional(),
    backchannel_logout_session_required: z.boolean().default(false),
    // RFC 9126 §6: its authorization requests are pushed first, or refused.
    require_pushed_authorization_requests: z.boolean().default(false),
    client_uri: WebPage.optional(),
    logo_uri: WebPage.optional(),
    policy_uri: WebPage.optional(),
    tos_uri: WebPage.optional(),
    contacts: z.array(z.email().max(254)).max(20).optional(),
    refresh_token_absolute_seconds: z.int().min(60).max(366 * 24 * 3600).optional(),
    refresh_token_idle_seconds: z.int().min(60).max(366 * 24 * 3600).optional(),
});

export const ClientMetadata = ClientMetadataFields.superRefine((m, ctx) => {
    for (const [field, uris] of [['redirect_uris', m.redirect_uris], ['post_logout_redirect_uris', m.post_logout_redirect_uris]] as const) {
      uris.forEach((uri, i) => {
        const problem = redirectUriProblem(uri, m.application_type);
        if (problem) ctx.addIssue({ code: 'custom', path: [field, i], message: `${field}[${i}] ${problem}` });
      });
    }
    const code = m.grant_types.includes('authorization_code');
    if (!code && !m.grant_types.includes(DEVICE_CODE_GRANT)) ctx.addIssue({ code: 'custom', path: ['grant_types'], message: `grant_types must include authorization_code or ${DEVICE_CODE_GRANT}` });
    if (code && m.redirect_uris.length === 0) ctx.addIssue({ code: 'custom', path: ['redirect_uris'], message: 'redirect_uris must name at least one address' });
    if (m.response_types !== undefined && m.response_types.includes('code') !== code) {
      ctx.addIssue({ code: 'custom', path: ['response_types'], message: code ? 'response_types must be ["code"] with the authorization_code grant' : 'response_types must be [] without the authorization_code grant' });
    }
    // A pairwise client's sector is its redirect URIs' host, or a sector_identifier_uri whose
    // document lists them all: without any, that document would prove nothing, and any host named
    // would give the client another application's subjects.
    if (m.subject_type === 'pairwise' && m.redirect_uris.length === 0) {
      ctx.addIssue({ code: 'custom', path: ['subject_type'], message: 'A pairwise client needs redirect_uris: its sector is theirs' });
    }
    for (const s of (m.scope ?? '').split(' ').filter(Boolean)) {
      if (!OidcScope.safeParse(s).success) ctx.addIssue({ code: 'custom', path: ['scope'], message: `Unsupported scope: ${s}` });
    }
    if (m.token_endpoint_auth_signing_alg !== undefined && m.token_endpoint_auth_method !== 'private_key_jwt') {
      ctx.addIssue({ code: 'custom', path: ['token_endpoint_auth_signing_alg'], message: 'token_endpoint_auth_signing_alg goes with private_key_jwt' });
    }
    // A device-grant client receives nothing at its redirect URIs, so they prove no host it holds:
    // its pairwise sector is a sector_identifier_uri's, or another application's subjects would be its.
    if (m.subject_type === 'pairwise' && m.grant_types.includes(DEVICE_CODE_GRANT) && !m.sector_identifier_uri) {
      ctx.addIssue({ code: 'custom', path: ['sector_identifier_uri'], message: 'A pairwise client with the device grant needs a sector_identifier_uri' });
    }
    if (m.jwks && m.jwks_uri) ctx.addIssue({ code: 'custom', path: ['jwks'], message: 'Send jwks or jwks_uri, not both' });
    if (m.token_endpoint_auth_method === 'private_key_jwt' && !m.jwks && !m.jwks_uri) {
      ctx.addIssue({ code: 'custom', path: ['jwks'], message: 'private_key_jwt needs the client’s public keys: jwks or jwks_uri' });
    }
    for (const [field, uri] of [['jwks_uri', m.jwks_uri], ['sector_identifier_uri', m.sector_identifier_uri]] as const) {
      const problem = uri === undefined ? null : redirectUriProblem(uri, 'web');
      if (problem) ctx.addIssue({ code: 'custom', path: [field], message: `${field} ${problem}` });
    }
    const backchannel = m.backchannel_logout_uri === undefined ? null : backchannelUriProblem(m.backchannel_logout_uri);
    if (backchannel) ctx.addIssue({ code: 'custom', path: ['backchannel_logout_uri'], message: `backchannel_logout_uri ${backchannel}` });
    m.jwks?.keys.forEach((key, i) => {
      const secret = PRIVATE_KEY_MEMBERS.find((member) => member in key);
      if (secret) ctx.addIssue({ code: 'custom', path: ['jwks', 'keys', i], message: `jwks.keys[${i}] holds private key material (${secret}): register public keys only` });
    });
    if (m.subject_type === 'pairwise' && !m.sector_identifier_uri && new Set(m.redirect_uris.map(hostOf)).size > 1) {
      ctx.addIssue({ code: 'custom', path: ['sector_identifier_uri'], message: 'A pairwise client whose redirect_uris have more than one host needs a sector_identifier_uri' });
    }
  });
export type ClientMetadata = z.infer<typeof ClientMetadata>;

function hostOf(uri: string): string {
  try {
    return new URL(uri).host;
  } catch {
    return uri;
  }
}

/** The registration endpoint's answer (RFC 7591 §3.2.1, RFC 7592 §3): the metadata as stored, and the client's credentials. */
export const ClientRegistration = ClientMetadataFields.extend({
  client_id: z.string(),
  client_id_issued_at: z.int(),
  /** The scopes the client may ask for, as stored (`openid` always). */
  scope: z.string(),
  /** Shown once, at registration (and when the method changes to a secret): only its hash is kept. */
  client_secret: z.string().optional(),
  client_secret_expires_at: z.literal(0).optional(),
  /** In every answer (RFC 7592 §3): made at registration and at each update (which rotates it); a read answers the one it was sent. */
  registration_access_token: z.string(),
  registration_client_uri: z.string(),
});
