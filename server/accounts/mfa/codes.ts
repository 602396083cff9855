import { createHmac, randomInt, type KeyObject } from 'node:crypto';
import { secretKey } from '../../secrets.ts';

/** Letters and digits that cannot be mistaken for each other (no 0/O, 1/I/L), 31 of them. */
const RECOVERY_ALPHABET = '23456789ABCDEFGHJKMNPQRSTUVWXYZ';
export const RECOVERY_CODE_COUNT = 10;

/**
 * The codes a person types (emailed 6-digit codes, `XXXX-XXXX` recovery codes) are stored as
 * HMACs under a key of the install: 6 digits (or 40 bits) are too few for a plain hash of a
 * copied table not to give them away.
 */
export class CodeHasher {
  readonly #key: KeyObject;

  constructor(key: string) {
    this.#key = secretKey(key);
  }

  hash(purpose: 'email' | 'recovery', owner: string, code: string): string {
    return createHmac('sha256', this.#key).update(`${purpose}\0${owner}\0${code}`).digest('hex');
  }
}

export function newEmailCode(): string {
  return String(randomInt(0, 1_000_000)).padStart(6, '0');
}

export function newRecoveryCode(): string {
  let out = '';
  for (let i = 0; i < 8; i += 1) {
    if (i === 4) out += '-';
    out += RECOVERY_ALPHABET[randomInt(0, RECOVERY_ALPHABET.length)];
  }
  return out;
}

/** A typed 6-digit code without the spaces or hyphens people put in. */
export function typedDigits(code: string): string {
  return code.replace(/[\s-]/g, '');
}

/** A typed recovery code in its stored form: upper case, `XXXX-XXXX`; null when it cannot be one. */
export function typedRecoveryCode(code: string): string | null {
  const plain = code.replace(/[\s-]/g, '').toUpperCase();
  return /^[A-Z0-9]{8}$/.test(plain) ? `${plain.slice(0, 4)}-${plain.slice(4)}` : null;
}
