import { describe, expect, it } from 'vitest';
import {
  AccessDenied,
  ConsentRequired,
  InvalidClient,
  InvalidGrant,
  InvalidRequest,
  InvalidScope,
  InvalidToken,
  LoginRequired,
  UnauthorizedClient,
  UnsupportedGrantType,
  UnsupportedResponseType,
} from '../../server/oidc/errors.ts';
import { errorOutcome } from '../../server/oidc/provider.ts';

const provider = { issuer: 'https://service.example' };
const back = { redirectUri: 'https://app.example/callback?keep=1', state: 's t' };

describe('an OAuth error decides whether it goes back to the client', () => {
  it('one that allows it is a redirect with error, error_description, state and iss', () => {
    expect(errorOutcome(provider, new InvalidScope('Unsupported scope: email'), back)).toEqual({
      redirect: 'https://app.example/callback?keep=1&error=invalid_scope&error_description=Unsupported+scope%3A+email&state=s+t&iss=https%3A%2F%2Fservice.example',
    });
  });

  it('one that does not is a 400 page with its message, even when a redirect URI is known', () => {
    expect(errorOutcome(provider, new InvalidRequest('Invalid redirect_uri', { allowRedirect: false }), back)).toEqual({ page: 'Invalid redirect_uri', status: 400 });
    expect(errorOutcome(provider, new InvalidClient('Invalid client_id'), back)).toEqual({ page: 'Invalid client_id', status: 400 });
  });

  it('with no verified redirect URI, every error is a page', () => {
    expect(errorOutcome(provider, new LoginRequired('The user is not signed in'))).toEqual({ page: 'The user is not signed in', status: 400 });
  });

  it('an error that is not a protocol error is thrown on', () => {
    const failure = new Error('disk full');
    expect(() => errorOutcome(provider, failure, back)).toThrow(failure);
  });

  it('error_description keeps to printable ASCII without " or \\', () => {
    expect(new InvalidRequest('a "quoted"\\ é\nline').description).toBe('a  quoted     line');
  });

  it('each class carries its code, status and redirect rule', () => {
    const table = [
      new InvalidRequest('x'),
      new InvalidClient('x'),
      new UnauthorizedClient('x'),
      new UnsupportedResponseType('x'),
      new InvalidScope('x'),
      new LoginRequired('x'),
      new ConsentRequired('x'),
      new AccessDenied('x'),
      new InvalidGrant('x'),
      new UnsupportedGrantType('x'),
      new InvalidToken('x'),
    ].map((e) => [e.error, e.status, e.allowRedirect]);
    expect(table).toEqual([
      ['invalid_request', 400, true],
      ['invalid_client', 401, false],
      ['unauthorized_client', 400, false],
      ['unsupported_response_type', 400, true],
      ['invalid_scope', 400, true],
      ['login_required', 400, true],
      ['consent_required', 400, true],
      ['access_denied', 400, true],
      ['invalid_grant', 400, false],
      ['unsupported_grant_type', 400, false],
      ['invalid_token', 401, false],
    ]);
  });
});
