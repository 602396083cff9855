/**
 * `backToClient` (`server/oidc/provider.ts`): an answer's values go back in the redirect URI's
 * query (or fragment, or a form to post) with `iss`, the URI's own query kept; a redirect URI
 * that `URL` writes as it stands takes the values without being taken apart, and comes out as
 * `URL` would have written it. And `sidOf`, which keeps its latest answers.
 */
import { createHmac, createSecretKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Memo } from '../../server/memo.ts';
import { backToClient, sidOf } from '../../server/oidc/provider.ts';

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

describe('sidOf', () => {
  const keyed = (secret: string) => ({ pairwiseKey: createSecretKey(Buffer.from(secret)), sids: new Memo<string, string>(1000) });
  const expected = (secret: string, session: string, client: string) =>
    createHmac('sha256', secret).update(`sid\n${session}\n${client}`).digest('base64url').slice(0, 32);

  it('is the HMAC of the session and the client under the install key, asked once or again', () => {
    const provider = keyed('install key one');
    for (let i = 0; i < 3; i += 1) expect(sidOf(provider, 'session-1', 'app')).toBe(expected('install key one', 'session-1', 'app'));
    expect(sidOf(provider, 'session-1', 'other-app')).toBe(expected('install key one', 'session-1', 'other-app'));
    expect(sidOf(provider, 'session-2', 'app')).toBe(expected('install key one', 'session-2', 'app'));
  });

  it("never answers what it kept under another provider's key", () => {
    const first = keyed('install key one');
    const second = keyed('install key two');
    expect(sidOf(first, 'session-1', 'app')).toBe(expected('install key one', 'session-1', 'app'));
    expect(sidOf(second, 'session-1', 'app')).toBe(expected('install key two', 'session-1', 'app'));
    expect(sidOf(first, 'session-1', 'app')).toBe(expected('install key one', 'session-1', 'app'));
  });

  it('answers right past the number of answers it keeps', () => {
    const provider = keyed('install key one');
    for (let i = 0; i < 2500; i += 1) expect(sidOf(provider, `session-${i}`, 'app')).toBe(expected('install key one', `session-${i}`, 'app'));
  });
});
