import { z } from 'zod';
import { Timestamp } from './common.ts';

/** The scopes the provider knows, and the claims each one releases. */
export const OIDC_SCOPES = {
  openid: ['sub'],
  profile: ['name'],
  email: ['email', 'email_verified'],
} as const;
export const OidcScope = z.enum(['openid', 'profile', 'email']);
export type OidcScope = z.infer<typeof OidcScope>;

export const OidcClientStatus = z.enum(['pending', 'approved', 'rejected']);

/** A client's id: chosen by the client, letters, digits and `._-`. */
export const OidcClientId = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9._-]+$/, { message: 'Only letters, digits, dot, underscore and hyphen are allowed' });

/** A redirect URI: absolute, no fragment; compared with the request's exactly. */
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

export const OidcClient = OidcClientInput.extend({ status: OidcClientStatus, createdAt: Timestamp, updatedAt: Timestamp });
export type OidcClient = z.infer<typeof OidcClient>;

export const OidcClientsResult = z.strictObject({ clients: z.array(OidcClient) });
export const OidcClientIdInput = z.strictObject({ id: OidcClientId });
export const OidcClientStatusInput = z.strictObject({ id: OidcClientId, status: OidcClientStatus });

/** A consent a person gave a client. */
export const OidcConsent = z.strictObject({ clientId: z.string(), clientName: z.string(), scopes: z.array(z.string()), createdAt: Timestamp });
export const OidcConsentsResult = z.strictObject({ consents: z.array(OidcConsent) });
export const OidcConsentClientInput = z.strictObject({ clientId: OidcClientId });

/** The JSON interaction endpoints behind the login and consent pages, for a separate frontend. */
export const InteractionInput = z.strictObject({ interactionId: z.string().min(1).max(64) });
export const InteractionConsentInput = z.strictObject({ interactionId: z.string().min(1).max(64), approved: z.boolean() });
export const InteractionResult = z.union([
  z.strictObject({ redirectUri: z.string() }),
  z.strictObject({ client: z.strictObject({ clientName: z.string() }), scopes: z.array(z.string()) }),
]);
export const RedirectResult = z.strictObject({ redirectUri: z.string() });
