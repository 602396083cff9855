import { z } from 'zod';
import { Timestamp } from './common.ts';

/** The scopes the provider knows, and the claims each one releases. */
export const OIDC_SCOPES = {
  openid: ['sub'],
  profile: ['name'],
  email: ['email', 'email_verified'],
  /**
   * No claims: a refresh token (OpenID Connect Core §11), for a client whose grants include
   * `refresh_token`, granted on a consent page only (`prompt=consent`); otherwise dropped.
   */
  offline_access: [],
} as const;
export const OidcScope = z.enum(['openid', 'profile', 'email', 'offline_access']);
export type OidcScope = z.infer<typeof OidcScope>;

/** How a client proves itself at the token, introspection and revocation endpoints (`none`: a public client, with PKCE). */
export const OidcAuthMethod = z.enum(['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt']);
export type OidcAuthMethod = z.infer<typeof OidcAuthMethod>;
/** The device authorization grant's type (RFC 8628 §3.4): a device without a browser, or a command line. */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
export const OidcGrantType = z.enum(['authorization_code', 'refresh_token', DEVICE_CODE_GRANT]);
/** The algorithms a client's assertion (`private_key_jwt`) may be signed with: asymmetric only, a client's keys being public ones. */
export const AssertionAlgorithm = z.enum(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']);
export type AssertionAlgorithm = z.infer<typeof AssertionAlgorithm>;
export type OidcGrantType = z.infer<typeof OidcGrantType>;
/** `pairwise`: the person is a different `sub` at each sector (an app cannot match people across venues). */
export const OidcSubjectType = z.enum(['public', 'pairwise']);
export type OidcSubjectType = z.infer<typeof OidcSubjectType>;

export const OidcClientStatus = z.enum(['pending', 'approved', 'rejected']);

/** A client's id: chosen by the client, letters, digits and `._-`. */
export const OidcClientId = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9._-]+$/, { message: 'Only letters, digits, dot, underscore and hyphen are allowed' });

/** A redirect URI: absolute, no fragment; compared with the request's exactly (but for the port of an http loopback IP literal: RFC 8252 §7.3). */
export const RedirectUri = z
  .url({ protocol: /^(https?|[a-z][a-z0-9+.-]*)$/ })
  .max(2000)
  .refine((uri) => !uri.includes('#'), { message: 'A redirect URI must not have a fragment' });

/** Registering a client (operators, super users): it starts `pending`. */
export const OidcClientInput = z.strictObject({
  id: OidcClientId,
  name: z.string().min(1).max(200),
  redirectUris: z.array(RedirectUri).min(1).max(20),
  scopes: z.array(OidcScope).min(1).refine((s) => s.includes('openid'), { message: 'The scopes must include openid' }),
});
export type OidcClientInput = z.infer<typeof OidcClientInput>;

/** A registered client as the registry lists it; its secrets and keys are never part of it. */
export const OidcClient = OidcClientInput.extend({
  /** None for a resource server (it signs nobody in: `ResourceServerInput`). */
  redirectUris: z.array(z.string()),
  scopes: z.array(OidcScope),
  status: OidcClientStatus,
  authMethod: OidcAuthMethod,
  grantTypes: z.array(OidcGrantType),
  postLogoutRedirectUris: z.array(z.string()),
  backchannelLogoutUri: z.string().nullable(),
  backchannelLogoutSessionRequired: z.boolean(),
  subjectType: OidcSubjectType,
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type OidcClient = z.infer<typeof OidcClient>;

/**
 * Registering a resource server (operators): an API that checks the access tokens of the
 * applications it serves (`forClients`) by introspection. It gets a secret, no grants and no
 * redirect URIs, and is approved at once.
 */
export const ResourceServerInput = z.strictObject({
  id: OidcClientId,
  name: z.string().min(1).max(200),
  forClients: z.array(OidcClientId).min(1, 'Name at least one client whose tokens it checks').max(50),
});
export type ResourceServerInput = z.infer<typeof ResourceServerInput>;

/**
 * Registering a command line or a device without a browser (operators): a public client with the
 * device grant (RFC 8628) and no redirect URI; `offline`: it may ask for refresh tokens
 * (`offline_access`, added to its scopes). It starts `pending`, as every client an operator adds.
 */
export const DeviceClientInput = z.strictObject({
  id: OidcClientId,
  name: z.string().min(1).max(200),
  scopes: z.array(OidcScope).min(1).refine((s) => s.includes('openid'), { message: 'The scopes must include openid' }),
  offline: z.boolean(),
});
export type DeviceClientInput = z.infer<typeof DeviceClientInput>;

export const OidcClientsResult = z.strictObject({ clients: z.array(OidcClient) });
export const OidcClientIdInput = z.strictObject({ id: OidcClientId });
export const OidcClientStatusInput = z.strictObject({ id: OidcClientId, status: OidcClientStatus });

/** A consent a person gave a client. */
export const OidcConsent = z.strictObject({
  clientId: z.string(),
  clientName: z.string(),
  scopes: z.array(z.string()),
  createdAt: Timestamp,
  /** `confidential`: a server-side application (a secret or keys); `public`: a browser or native app. */
  kind: z.enum(['public', 'confidential']),
  /** Whether it holds a refresh token now: it may act while the person is away. */
  offline: z.boolean(),
  /** When it was last issued the person's tokens (null: not yet). */
  lastUsedAt: Timestamp.nullable(),
  /** `createdAt` under the real platform's name, which its web client's list of apps reads. */
  tcdate: Timestamp,
  /** What the scopes share, in words (`OpenReview ID`, `Name`, `Email`), as that list shows them. */
  sharedData: z.array(z.string()),
});
export type OidcConsent = z.infer<typeof OidcConsent>;
export const OidcConsentsResult = z.strictObject({ consents: z.array(OidcConsent) });
export const OidcConsentClientInput = z.strictObject({ clientId: OidcClientId });

/** The JSON interaction endpoints behind the login and consent pages, for a separate frontend. */
export const InteractionInput = z.strictObject({ interactionId: z.string().min(1).max(64) });
export const InteractionConsentInput = z.strictObject({ interactionId: z.string().min(1).max(64), approved: z.boolean() });
export const InteractionResult = z.union([
  z.strictObject({ redirectUri: z.string() }),
  z.strictObject({ client: z.strictObject({ clientName: z.string() }), scopes: z.array(z.strictObject({ scope: z.string(), description: z.string() })) }),
]);
export const RedirectResult = z.strictObject({ redirectUri: z.string() });

/**
 * A device's user code as a person types it (RFC 8628 §3.3): eight letters, shown `BCDF-GHJK`;
 * case, spaces and dashes do not matter.
 */
export const DeviceUserCode = z.string().trim().min(1, 'Type the code your device shows').max(32, 'That is not a code a device shows');
/** The device page's look-up of a user code: what the device asks, for the person to confirm. */
export const DeviceCodeInput = z.strictObject({ userCode: DeviceUserCode });
export const DeviceRequest = z.strictObject({
  /** The code as the device shows it (`BCDF-GHJK`), to compare. */
  userCode: z.string(),
  clientName: z.string(),
  scopes: z.array(z.strictObject({ scope: z.string(), description: z.string() })),
  /** When the code expires (ms). */
  expiresAt: Timestamp,
});
export type DeviceRequest = z.infer<typeof DeviceRequest>;
/** The person's answer to a device's request: allow (`approved`) or deny. */
export const DeviceDecisionInput = z.strictObject({ userCode: DeviceUserCode, approved: z.boolean() });
export const DeviceDecision = z.strictObject({ approved: z.boolean(), clientName: z.string() });

/**
 * A person registers an application from the account pages (`oidc.registerApplication`): it
 * waits for an operator's approval, as one registered with an initial access token made
 * without `--approved` does.
 */
export const RegisterApplicationInput = z
  .strictObject({
    name: z.string().trim().min(1, 'Give the application a name').max(200),
    /** None for a `device` (it signs people in with a code they type here). */
    redirectUris: z.array(z.string().trim().min(1).max(2000)).max(10),
    /**
     * `confidential`: a server-side web app, given a secret; `public`: a browser or native app,
     * with PKCE (native when every address is a loopback one or a scheme of its own: answered at
     * any port of the loopback address, RFC 8252); `device`: a command line or a device without a
     * browser (RFC 8628, no secret).
     */
    kind: z.enum(['confidential', 'public', 'device']),
    /** Whether it may ask for refresh tokens (`offline_access`). */
    offline: z.boolean(),
  })
  .refine((input) => input.kind === 'device' || input.redirectUris.length > 0, { message: 'Give at least one address to come back to', path: ['redirectUris'] });
export type RegisterApplicationInput = z.infer<typeof RegisterApplicationInput>;
export const RegisteredApplication = z.strictObject({
  clientId: z.string(),
  /** Shown once: only its hash is kept. */
  clientSecret: z.string().optional(),
  status: OidcClientStatus,
});
export type RegisteredApplication = z.infer<typeof RegisteredApplication>;
