import { OIDC_SCOPES, OidcGrantType } from '../../shared/index.ts';
import { ASSERTION_ALGORITHMS } from './client-auth.ts';

/** How clients may authenticate at the token, introspection and revocation endpoints. */
const CLIENT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'];

/** `/.well-known/openid-configuration`: what this provider supports, and where its endpoints are. */
export function discovery(issuer: string): Record<string, unknown> {
  return {
    issuer,
    authorization_endpoint: `${issuer}/oidc/authorize`,
    token_endpoint: `${issuer}/oidc/token`,
    userinfo_endpoint: `${issuer}/oidc/userinfo`,
    jwks_uri: `${issuer}/oidc/jwks`,
    registration_endpoint: `${issuer}/oidc/register`,
    revocation_endpoint: `${issuer}/oidc/revoke`,
    introspection_endpoint: `${issuer}/oidc/introspect`,
    end_session_endpoint: `${issuer}/oidc/logout`,
    device_authorization_endpoint: `${issuer}/oidc/device/auth`,
    // RFC 9126 §5; `require_pushed_authorization_requests` is left out, meaning false, as node-oidc-provider does.
    pushed_authorization_request_endpoint: `${issuer}/oidc/par`,
    backchannel_logout_supported: true,
    backchannel_logout_session_supported: true,
    scopes_supported: Object.keys(OIDC_SCOPES),
    claims_supported: ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'at_hash', 'amr', 'acr', 'sid', 'name', 'email', 'email_verified'],
    // '1': a password or a passkey alone; '2': a second factor proved in this sign-in (`acr_values=2` asks for it).
    acr_values_supported: ['1', '2'],
    response_types_supported: ['code'],
    response_modes_supported: ['query', 'fragment', 'form_post'],
    grant_types_supported: OidcGrantType.options,
    subject_types_supported: ['public', 'pairwise'],
    id_token_signing_alg_values_supported: ['RS256'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    token_endpoint_auth_signing_alg_values_supported: ASSERTION_ALGORITHMS,
    revocation_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    revocation_endpoint_auth_signing_alg_values_supported: ASSERTION_ALGORITHMS,
    introspection_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS.filter((m) => m !== 'none'),
    introspection_endpoint_auth_signing_alg_values_supported: ASSERTION_ALGORITHMS,
    claims_parameter_supported: false,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    authorization_response_iss_parameter_supported: true,
  };
}
