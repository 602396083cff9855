import { Secret, TOTP } from 'otpauth';

/** The name an authenticator app shows beside this service's codes. */
export const TOTP_ISSUER = 'Peer Review';

/** RFC 6238 as every authenticator app reads it: SHA-1, 6 digits, 30 seconds. */
const PERIOD = 30;
const DIGITS = 6;
/** One step either side of the current one is accepted (a clock a little off, a code typed late). */
const WINDOW = 1;

function totpOf(secretBase32: string, label = 'account', issuer = 'Peer Review'): TOTP {
  return new TOTP({ issuer, label, algorithm: 'SHA1', digits: DIGITS, period: PERIOD, secret: Secret.fromBase32(secretBase32) });
}

/** A fresh 160-bit secret, base32 (RFC 4226 recommends 160 bits). */
export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

/** The `otpauth://` URI an authenticator app scans, and its QR code as a PNG data URL. */
export async function totpProvisioning(secretBase32: string, label: string, issuer: string): Promise<{ qrCodeUrl: string; qrCodeDataUrl: string }> {
  const qrCodeUrl = totpOf(secretBase32, label, issuer).toString();
  return { qrCodeUrl, qrCodeDataUrl: await (await import('qrcode')).default.toDataURL(qrCodeUrl) };
}

/**
 * The time step a 6-digit code belongs to (within ±1 step of `now`), or null when it is wrong.
 * The caller keeps the last accepted step, so each code is used once.
 */
export function totpStep(secretBase32: string, code: string, now: number): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const delta = totpOf(secretBase32).validate({ token: code, timestamp: now, window: WINDOW });
  if (delta === null) return null;
  return Math.floor(now / 1000 / PERIOD) + delta;
}

