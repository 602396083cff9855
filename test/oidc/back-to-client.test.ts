/**
 * `backToClient` (`server/oidc/provider.ts`): an answer's values go back in the redirect URI's
 * query (or fragment, or a form to post) with `iss`, the URI's own query kept; a redirect URI
 * that `URL` writes as it stands takes the values without being taken apart, and comes out as
 * `URL` would have written it.
 */
import { describe, expect, it } from 'vitest';
import { backToClient } from '../../server/oidc/provider.ts';

const provider = { issuer: 'https://openreview.example.org' };
const values = { code: 'c2.a b+c', state: 'a&b=c', nonce: undefined };

/** What `URL` makes of the URI with the values set in its query, as every answer once was built. */
function throughUrl(uri: string): string {
  const url = new URL(uri);
  for (const [key, value] of Object.entries({ code: values.code, state: values.state, iss: provider.issuer })) url.searchParams.set(key, value);
  return url.toString();
}

describe('backToClient', () => {
  it.each([
    'https://app.example.org/callback',
    'http://127.0.0.1:8123/cb',
    'com.example.app:/oauth2redirect',
    'https://app.example.org/cb?tenant=1&state=stale',
    'https://App.Example.org/cb',
    'https://app.example.org',
    'https://app.example.org/a%20b/ü',
    'https://app.example.org/cb?',
  ])('%s: the values in the query, the URI as URL writes it', (uri) => {
    expect(backToClient(provider, { redirectUri: uri }, values)).toEqual({ redirect: throughUrl(uri) });
  });

  it('keeps the query of the URI, and sets a value it already names', () => {
    const { redirect } = backToClient(provider, { redirectUri: 'https://app.example.org/cb?tenant=1&state=stale' }, values);
    expect([...new URL(redirect).searchParams]).toEqual([['tenant', '1'], ['state', 'a&b=c'], ['code', 'c2.a b+c'], ['iss', provider.issuer]]);
  });

  it('answers in the fragment, or as a form to post with the same values', () => {
    expect(backToClient(provider, { redirectUri: 'https://app.example.org/cb', responseMode: 'fragment' }, { code: 'x' })).toEqual({
      redirect: `https://app.example.org/cb#code=x&iss=${encodeURIComponent(provider.issuer)}`,
    });
    expect(backToClient(provider, { redirectUri: 'https://app.example.org/cb', responseMode: 'form_post' }, { code: 'x', state: undefined })).toEqual({
      redirect: `https://app.example.org/cb?code=x&iss=${encodeURIComponent(provider.issuer)}`,
      post: { action: 'https://app.example.org/cb', fields: [['code', 'x'], ['iss', provider.issuer]] },
    });
  });
});
