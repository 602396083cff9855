/**
 * Words and choices the pages work out before rendering: the "From" column of the security
 * events, and the method the sign-in provider's second step checks. Rendered by the real
 * templates; no server needed.
 */
import { describe, expect, it } from 'vitest';
import { secondStepPage } from '../../server/web/pages/provider/views.ts';
import { eventFrom } from '../../server/web/pages/security.ts';
import { eventWords } from '../../server/web/pages/security-activity.ts';

describe('the security events’ "From" column', () => {
  it('names the browser and system, an unknown browser, or nothing at all', () => {
    expect(eventFrom({ browser: 'Firefox 128', os: 'Linux', address: '127.0.0.1' })).toBe('Firefox 128 on Linux (127.0.0.1)');
    expect(eventFrom({ browser: null, os: null, address: '127.0.0.1' })).toBe('Unknown browser (127.0.0.1)');
    expect(eventFrom({ browser: 'Safari 17', os: 'iOS', address: null })).toBe('Safari 17 on iOS');
    // A factor turned on or off records no browser and no address.
    expect(eventFrom({ browser: null, os: null, address: null })).toBe('—');
    expect(eventFrom({})).toBe('—');
  });
});

describe('the activity log’s "What" column', () => {
  it('words every action the service writes about a person, never its raw name', () => {
    const actions = ['sign-in', 'sign-in:failed', 'mfa.code.wrong', 'sign-in:not-me', 'password:change', 'password:reset', 'session:end', 'app:granted', 'app:revoked', 'email:added', 'email:removed', 'email:preferred', 'email:undone', 'profile:update', 'account:deletion-requested', 'account:deletion-cancelled', 'mfa.totp.enabled', 'mfa.locked', 'merge'];
    for (const action of actions) expect(eventWords({ action, actor: '~Ada_Lovelace1' }), action).not.toBe(action);
    expect(eventWords({ action: 'profile:update', actor: '~Ada_Lovelace1' })).toBe('Profile edited');
  });
});

describe('the sign-in provider’s second step', () => {
  const page = (methods: string[], method: string) =>
    secondStepPage({ interactionId: 'i', csrf: 'c', clientName: 'Paper Finder', mfaPendingToken: 'p', methods, method, requestId: 'r1', error: 'Invalid verification code' });
  const checked = (html: string) => [...html.matchAll(/name="method" value="(\w+)" checked/g)].map((m) => m[1]);

  it('checks the preferred code method', () => {
    expect(checked(page(['totp', 'emailOtp'], 'emailOtp'))).toEqual(['emailOtp']);
  });

  it('checks the first code method when the passkey is preferred (or was just tried), and shows the passkey button first', () => {
    const html = page(['passkey', 'emailOtp', 'totp'], 'passkey');
    expect(checked(html)).toEqual(['emailOtp']);
    expect(html.indexOf('id="passkey-step-form"')).toBeGreaterThan(-1);
    expect(html.indexOf('id="passkey-step-form"')).toBeLessThan(html.indexOf('name="method" value="emailOtp"'));
    expect(checked(page(['passkey'], 'passkey'))).toEqual(['recovery']);
  });

  it('shows its error tied to the Code field unless a passkey was refused, with the request id only when one is given (something went wrong on our side)', () => {
    const html = page(['totp'], 'totp');
    expect(html).toMatch(/quote the request id <code>r1<\/code>/);
    expect(secondStepPage({ interactionId: 'i', csrf: 'c', clientName: 'Paper Finder', mfaPendingToken: 'p', methods: ['totp'], method: 'totp', requestId: '', error: 'Wrong code.' })).not.toContain('request id');
    expect(html).toMatch(/<input id="code"[^>]* aria-invalid="true" aria-describedby="step-error">/);
    expect(html).toContain('id="step-error"');
    expect(page(['passkey', 'totp'], 'passkey')).not.toContain('aria-invalid');
  });
});
