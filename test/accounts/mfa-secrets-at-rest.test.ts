/** TOTP secrets at rest: AES-256-GCM under `MFA_ENCRYPTION_KEY`, or a key derived from the session secret. */
import { describe, expect, it } from 'vitest';
import { SecretBox } from '../../server/secrets.ts';
import { loadConfig } from '../../server/config.ts';

const SESSION_SECRET = 'the-session-secret-of-this-install-0123456789';

describe('SecretBox', () => {
  it('opens what it sealed for the same person, and nothing else', () => {
    const box = new SecretBox({ configuredKey: undefined, sessionSecret: SESSION_SECRET });
    const sealed = box.seal('JBSWY3DPEHPK3PXP', '~Ada_Lovelace1');
    expect(sealed).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(sealed).not.toContain('JBSWY3DPEHPK3PXP');
    expect(box.open(sealed, '~Ada_Lovelace1')).toBe('JBSWY3DPEHPK3PXP');
    // A row copied to another person does not decrypt.
    expect(box.open(sealed, '~Grace_Hopper1')).toBeNull();
    // Nor one sealed twice the same way: the IV is fresh each time.
    expect(box.seal('JBSWY3DPEHPK3PXP', '~Ada_Lovelace1')).not.toBe(sealed);
    // A damaged row is refused, not thrown on.
    const [v, iv, tag, body] = sealed.split('.');
    expect(box.open([v, iv, tag, `${body}A`].join('.'), '~Ada_Lovelace1')).toBeNull();
    expect(box.open('not-sealed', '~Ada_Lovelace1')).toBeNull();
  });

  it('MFA_ENCRYPTION_KEY, when set, is the key: another key (or the derived one) cannot open its secrets', () => {
    const configured = new SecretBox({ configuredKey: 'an-operator-chosen-key-of-32-characters!', sessionSecret: SESSION_SECRET });
    const derived = new SecretBox({ configuredKey: undefined, sessionSecret: SESSION_SECRET });
    const other = new SecretBox({ configuredKey: undefined, sessionSecret: `${SESSION_SECRET}-other` });
    const sealed = configured.seal('SECRET', '~A1');
    expect(configured.open(sealed, '~A1')).toBe('SECRET');
    expect(derived.open(sealed, '~A1')).toBeNull();
    expect(other.open(derived.seal('SECRET', '~A1'), '~A1')).toBeNull();
  });

  it('the configuration refuses an MFA_ENCRYPTION_KEY shorter than 32 characters', () => {
    expect(() => loadConfig({ MFA_ENCRYPTION_KEY: 'short' })).toThrow(/MFA_ENCRYPTION_KEY must be at least 32 characters/);
    expect(loadConfig({ MFA_ENCRYPTION_KEY: 'x'.repeat(32) }).mfaEncryptionKey).toBe('x'.repeat(32));
  });
});
