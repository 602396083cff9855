import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.ts';

const config = (env: Record<string, string>) => loadConfig({ DATA_DIR: '/tmp/unused', ...env }).webauthn;

describe('where passkeys belong (WEBAUTHN_RP_ID, BASE_URL, WEB_URL)', () => {
  it('is the host of BASE_URL by default, on its origin only', () => {
    expect(config({ BASE_URL: 'https://reviews.example.org' })).toEqual({ rpId: 'reviews.example.org', rpName: 'Peer Review', origins: ['https://reviews.example.org'] });
  });

  it('takes a parent domain, and then also the web application’s origin under it', () => {
    expect(config({ BASE_URL: 'https://api.example.org', WEB_URL: 'https://example.org', WEBAUTHN_RP_ID: 'example.org' })).toEqual({
      rpId: 'example.org',
      rpName: 'Peer Review',
      origins: ['https://api.example.org', 'https://example.org'],
    });
  });

  it('leaves out a web application that is not under the RP ID', () => {
    expect(config({ BASE_URL: 'https://api.example.org', WEB_URL: 'https://reviews.example.net' }).origins).toEqual(['https://api.example.org']);
  });

  it('refuses an RP ID that BASE_URL is not under, and one that is not a domain name', () => {
    expect(() => config({ BASE_URL: 'https://api.example.org', WEBAUTHN_RP_ID: 'example.net' })).toThrow(/WEBAUTHN_RP_ID: example.net must be the host of BASE_URL/);
    expect(() => config({ BASE_URL: 'https://api.example.org', WEBAUTHN_RP_ID: 'https://example.org' })).toThrow(/WEBAUTHN_RP_ID is a domain name/);
    // Not a suffix match on text: `ample.org` is not a domain `api.example.org` is under.
    expect(() => config({ BASE_URL: 'https://api.example.org', WEBAUTHN_RP_ID: 'ample.org' })).toThrow(/must be the host of BASE_URL/);
  });
});
