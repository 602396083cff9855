import { z } from 'zod';
import { DEVICE_CODE_GRANT } from './oidc.ts';

// What the sign-in provider's protocol endpoints take and answer, for the API document (and any
// client that wants the types). The endpoints check their forms themselves, in the order their
// standards give each refusal its OAuth error (`server/oidc/token.ts` and the rest): these
// schemas describe them, and so every field is a string the endpoint reads, optional here.

const Text = z.string();

/** How a client proves itself in a form (RFC 6749 §2.3.1 `client_secret_post`, RFC 7523 `private_key_jwt`); or the `Authorization: Basic` header. */
const ClientProofFields = {
  client_id: Text.optional(),
  client_secret: Text.optional(),
  client_assertion_type: z.literal('urn:ietf:params:oauth:client-assertion-type:jwt-bearer').optional(),
  client_assertion: Text.optional(),
};

/** `POST /oidc/token` (RFC 6749 §4.1.3, §6; RFC 8628 §3.4): a code with its PKCE verifier, a refresh token, or a device code. */
export const TokenRequestForm = z.object({
  grant_type: z.enum(['authorization_code', 'refresh_token', DEVICE_CODE_GRANT]),
  code: Text.optional(),
  device_code: Text.optional(),
  redirect_uri: Text.optional(),
  code_verifier: Text.optional(),
  refresh_token: Text.optional(),
  scope: Text.optional(),
  ...ClientProofFields,
});

/** `POST /oidc/device/auth` (RFC 8628 §3.1): a device asks to sign someone in. */
export const DeviceAuthorizationForm = z.object({ scope: Text.describe('Space-separated; must include openid'), ...ClientProofFields });

/** `POST /oidc/par` (RFC 9126 §2.1): an authorization request pushed before the browser is sent, with the client's proof. */
export const PushedAuthorizationForm = z.object({
  response_type: z.literal('code'),
  redirect_uri: Text,
  scope: Text.describe('Space-separated; must include openid'),
  state: Text.optional(),
  nonce: Text.optional(),
  code_challenge: Text.optional().describe('Required from public clients: BASE64URL(SHA-256(code_verifier))'),
  code_challenge_method: z.literal('S256').optional(),
  response_mode: z.enum(['query', 'fragment', 'form_post']).optional(),
  prompt: Text.optional(),
  max_age: Text.optional(),
  acr_values: Text.optional(),
  id_token_hint: Text.optional(),
  login_hint: Text.optional().describe('Fills in the login page’s first field'),
  ...ClientProofFields,
});

/** The pushed authorization request endpoint's answer (RFC 9126 §2.2): send the browser to the authorization endpoint with `client_id` and this `request_uri`. */
export const PushedAuthorizationAnswer = z.object({ request_uri: Text, expires_in: z.int() });

/** The device authorization endpoint's answer (RFC 8628 §3.2). */
export const DeviceAuthorizationAnswer = z.object({
  device_code: Text,
  user_code: Text,
  verification_uri: Text,
  verification_uri_complete: Text,
  expires_in: z.int(),
  interval: z.int(),
});

/** The token endpoint's answer (RFC 6749 §5.1, OpenID Connect Core §3.1.3.3). */
export const TokenAnswerBody = z.object({
  access_token: Text,
  token_type: z.literal('Bearer'),
  expires_in: z.int(),
  id_token: Text.optional(),
  refresh_token: Text.optional(),
  scope: Text.optional(),
});

/** `POST /oidc/introspect` (RFC 7662 §2.1). */
export const IntrospectionForm = z.object({ token: Text, token_type_hint: z.enum(['access_token', 'refresh_token']).optional(), ...ClientProofFields });

/** RFC 7662 §2.2: `{active: false}` alone for anything not active or not the caller's. */
export const IntrospectionAnswer = z.object({
  active: z.boolean(),
  token_type: Text.optional(),
  scope: Text.optional(),
  client_id: Text.optional(),
  sub: Text.optional(),
  aud: Text.optional(),
  iss: Text.optional(),
  exp: z.int().optional(),
  iat: z.int().optional(),
});

/** `POST /oidc/revoke` (RFC 7009 §2.1): 200 for any token; `invalid_client` for a client that fails to prove itself. */
export const RevocationForm = z.object({ token: Text, token_type_hint: z.enum(['access_token', 'refresh_token']).optional(), ...ClientProofFields });

/**
 * `GET|POST /oidc/logout` (OpenID Connect RP-Initiated Logout 1.0 §2): every parameter is
 * optional; a `post_logout_redirect_uri` is followed only when the client registered it exactly.
 */
export const EndSessionParams = z.object({
  id_token_hint: Text.optional().describe('An ID token this provider issued (expired ones too): whose session ends, and for which client'),
  client_id: Text.optional(),
  post_logout_redirect_uri: Text.optional().describe('One of the client’s registered post_logout_redirect_uris'),
  state: Text.optional(),
  logout_hint: Text.optional(),
  ui_locales: Text.optional(),
});

/** `GET|POST /oidc/userinfo`: `sub`, and by scope `name`, `email`, `email_verified`. */
export const UserInfoAnswer = z.object({ sub: Text, name: Text.optional(), email: Text.optional(), email_verified: z.boolean().optional() });
