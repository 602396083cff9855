import { describe, expect, it } from 'vitest';
import { safeNext } from '../../server/web/pages/kit.ts';

describe('safeNext, where a sign-in goes next', () => {
  it.each([
    ['/account/profile', '/account/profile'],
    ['/account/security/apps?notice=x#top', '/account/security/apps?notice=x#top'],
    ['/account/./profile', '/account/profile'],
  ])('keeps an account page: %s → %s', (next, expected) => {
    expect(safeNext(next)).toBe(expected);
  });

  it.each(['/account/../oidc/logout', '/account/%2e%2e/docs', '/account/x/../../oidc', '//evil.example/account/', '/\\evil.example', 'https://evil.example/account/x', 'javascript:alert(1)', '/oidc/logout', '', 'account/profile'])(
    'sends anything else to the security page: %s',
    (next) => {
      expect(safeNext(next)).toBe('/account/security');
    },
  );
});
