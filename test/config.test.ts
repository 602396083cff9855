/**
 * Settings read at start (`server/config.ts`): a value that is a mistake is refused with its
 * name and what it must be, never read as something else. Found by an independent review:
 * `PORT=` (a blank line in an environment file) listened on a random port, and
 * `UPLOAD_HUMAN_VERIFICATION_AFTER=` turned the upload check off.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../server/config.ts';

describe('settings', () => {
  it.each([
    ['PORT', ''],
    ['PORT', '0x50'],
    ['PORT', ' 80 '],
    ['PORT', '1e3'],
    ['METRICS_PORT', ''],
    ['UPLOAD_HUMAN_VERIFICATION_AFTER', ''],
    ['OIDC_KEY_ACTIVATION_SECONDS', ''],
    ['REFRESH_TOKEN_SECONDS', '-1'],
    ['MAX_UPLOAD_MB', ''],
    ['CHUNK_MAX_MB', 'Infinity'],
  ])('refuse %s=%j as no number', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`${name}: must be`));
  });

  it('refuse MAX_UPLOAD_MB=0', () => {
    expect(() => loadConfig({ MAX_UPLOAD_MB: '0' })).toThrow(/MAX_UPLOAD_MB: /);
  });

  it.each(['not a url', 'http://mail.example.org', 'smtp://', 'mail.example.org:587'])('refuse SMTP_URL=%j', (value) => {
    expect(() => loadConfig({ SMTP_URL: value })).toThrow(/SMTP_URL must be an smtp:\/\/ or smtps:\/\/ address with a host/);
  });

  it('read decimal numbers and mail addresses as given', () => {
    expect(loadConfig({ PORT: '8080', METRICS_PORT: '9464', MAX_UPLOAD_MB: '0.5', UPLOAD_HUMAN_VERIFICATION_AFTER: '0', SMTP_URL: 'smtps://user:pass@mail.example.org' })).toMatchObject({
      port: 8080,
      metricsPort: 9464,
      maxUploadBytes: 512 * 1024,
      smtpUrl: 'smtps://user:pass@mail.example.org',
    });
    expect(loadConfig({ SMTP_URL: 'smtp://127.0.0.1:2525' })).toMatchObject({ smtpUrl: 'smtp://127.0.0.1:2525' });
  });
});
