/**
 * The provider's protocol errors: one class per OAuth error code it answers, each with its HTTP
 * status (at the token, userinfo and revocation endpoints, which answer JSON) and whether it may
 * go back to the client's redirect URI.
 *
 * `allowRedirect` is the error's own decision: an error that leaves the client or its redirect
 * URI unverified (an unknown client, an unapproved one, a redirect URI that is not registered, a
 * parameter naming either sent twice, a sign-in request that no longer exists) is never sent to
 * a redirect URI; it is shown to the person as a page. Errors of the token and UserInfo
 * endpoints are JSON and never redirect either.
 */
export abstract class OAuthError extends Error {
  /** The `error` code of RFC 6749 §4.1.2.1 / §5.2, OpenID Connect Core §3.1.2.6, RFC 6750 §3.1. */
  abstract readonly error: string;
  readonly status: number = 400;
  readonly allowRedirect: boolean = true;

  /** `error_description` is printable ASCII without `"` or `\`, as RFC 6749 asks. */
  get description(): string {
    return this.message.replace(/[^\x20-\x21\x23-\x5B\x5D-\x7E]/g, ' ');
  }
}

/**
 * A request that is malformed or no longer valid. It goes back to the client unless
 * `allowRedirect: false` says the parameters that tell where to (client_id, redirect_uri) or the
 * request itself cannot be trusted.
 */
export class InvalidRequest extends OAuthError {
  readonly error = 'invalid_request';
  override readonly allowRedirect: boolean;

  constructor(description: string, opts: { allowRedirect?: boolean } = {}) {
    super(description);
    this.allowRedirect = opts.allowRedirect ?? true;
  }
}

/**
 * An unknown client, one not approved, or one that failed to prove itself: 401, never a
 * redirect. `basic`: the client tried the Authorization header, so the answer carries a
 * `WWW-Authenticate: Basic` challenge (RFC 6749 §5.2).
 */
export class InvalidClient extends OAuthError {
  readonly error = 'invalid_client';
  override readonly status = 401;
  override readonly allowRedirect = false;
  readonly basic: boolean;

  constructor(description: string, opts: { basic?: boolean } = {}) {
    super(description);
    this.basic = opts.basic ?? false;
  }
}

/** A client asks for a grant it was not registered for (RFC 6749 §5.2). */
export class UnauthorizedGrant extends OAuthError {
  readonly error = 'unauthorized_client';
  override readonly allowRedirect = false;
}

/** A client whose registration is not approved asks to sign someone in: a page, never a redirect. */
export class UnauthorizedClient extends OAuthError {
  readonly error = 'unauthorized_client';
  override readonly allowRedirect = false;
}

export class UnsupportedResponseType extends OAuthError {
  readonly error = 'unsupported_response_type';
}

/** A request object (`request`) was sent: not supported (OpenID Connect Core §6.1, §3.1.2.6). */
export class RequestNotSupported extends OAuthError {
  readonly error = 'request_not_supported';
}

/** A request object by reference (`request_uri`) was sent: not supported (OpenID Connect Core §6.2). */
export class RequestUriNotSupported extends OAuthError {
  readonly error = 'request_uri_not_supported';
}

/** A pushed request's `request_uri` (RFC 9126) that is unknown, expired, used, or another client's. */
export class InvalidRequestUri extends OAuthError {
  readonly error = 'invalid_request_uri';
}

/** A parameter sent beside a pushed request's `request_uri` contradicts it (node-oidc-provider's word for it). */
export class InvalidRequestObject extends OAuthError {
  readonly error = 'invalid_request_object';
}

export class InvalidScope extends OAuthError {
  readonly error = 'invalid_scope';
}

/** `prompt=none`, and the person is not signed in (or must sign in again). */
export class LoginRequired extends OAuthError {
  readonly error = 'login_required';
}

/** `prompt=none`, and the person has not consented to what the client asks. */
export class ConsentRequired extends OAuthError {
  readonly error = 'consent_required';
}

/**
 * The sign-in cannot meet what the client requires of it (OpenID Connect Core Error Code
 * unmet_authentication_requirements 1.0): `acr_values=2` alone, and the person has no second
 * factor. More telling than `access_denied`, which says someone refused.
 */
export class UnmetAuthenticationRequirements extends OAuthError {
  readonly error = 'unmet_authentication_requirements';
}

/** RFC 6749 §4.1.2.1: the server cannot take the request now (here, an address past its allowance of stored sign-in requests). */
export class TemporarilyUnavailable extends OAuthError {
  readonly error = 'temporarily_unavailable';
}

/** The person answered "Deny" on the consent page. */
export class AccessDenied extends OAuthError {
  readonly error = 'access_denied';
}

/** Token endpoint: a code (or its verifier) that is unknown, expired, used, or no longer honoured. */
export class InvalidGrant extends OAuthError {
  readonly error = 'invalid_grant';
  override readonly allowRedirect = false;
}

export class UnsupportedGrantType extends OAuthError {
  readonly error = 'unsupported_grant_type';
  override readonly allowRedirect = false;
}

/** UserInfo: an access token that is unknown, expired, revoked, or no longer honoured. */
export class InvalidToken extends OAuthError {
  readonly error = 'invalid_token';
  override readonly status = 401;
  override readonly allowRedirect = false;
}

/**
 * UserInfo: a live access token without the scope it needs (`openid`: OpenID Connect Core §5.3,
 * RFC 6750 §3.1), 403 with the scope named in the challenge. A refresh that narrows the scopes
 * may leave `openid` out.
 */
export class InsufficientScope extends OAuthError {
  readonly error = 'insufficient_scope';
  override readonly status = 403;
  override readonly allowRedirect = false;
  readonly scope = 'openid';
}

/** Registration (RFC 7591 §3.2.2): a redirect or sign-out address that cannot be registered. */
export class InvalidRedirectUri extends OAuthError {
  readonly error = 'invalid_redirect_uri';
  override readonly allowRedirect = false;
}

/** Registration (RFC 7591 §3.2.2): any other metadata that cannot be registered. */
export class InvalidClientMetadata extends OAuthError {
  readonly error = 'invalid_client_metadata';
  override readonly allowRedirect = false;
}

// ---- the device grant's answers while it waits (RFC 8628 §3.5) --------------------------------------

/** The person has not answered the device's request yet: poll again after the interval. */
export class AuthorizationPending extends OAuthError {
  readonly error = 'authorization_pending';
  override readonly allowRedirect = false;
}

/** The device polled sooner than its interval: it must wait 5 s longer from now on. */
export class SlowDown extends OAuthError {
  readonly error = 'slow_down';
  override readonly allowRedirect = false;
}

/** The device's request expired before it was answered (or collected): start again. */
export class ExpiredToken extends OAuthError {
  readonly error = 'expired_token';
  override readonly allowRedirect = false;
}

/**
 * The device authorization endpoint asked too often from one address (`RATE_LIMITS.deviceAuthorizationAddress`):
 * 429 with `Retry-After`, in OAuth's body (RFC 8628 §3.2: RFC 6749 §5.2's errors; `slow_down` is
 * the token endpoint's alone).
 */
export class TooManyDeviceRequests extends OAuthError {
  readonly error = 'invalid_request';
  override readonly status = 429;
  override readonly allowRedirect = false;

  readonly retryAfter: number;

  constructor(description: string, retryAfter: number) {
    super(description);
    this.retryAfter = retryAfter;
  }
}
