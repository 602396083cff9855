import { createHmac, randomInt, type KeyObject } from 'node:crypto';
import { AppError } from '../../shared/errors.ts';
import type { AccountsRepository, TokenKind, TokenRecord } from './repository.ts';
import { hashSecret, randomToken, safeEqual, secretKey } from '../secrets.ts';

/** After this many wrong 6-digit codes a token is void. */
export const MAX_CODE_ATTEMPTS = 5;

export interface IssuedToken {
  /** The secret of the link (256 bits, base64url); only its hash is stored. */
  token: string;
  /** The 6-digit code a person types; only its keyed hash is stored. */
  code: string;
  expiresAt: number;
}

/**
 * Activation, email-confirmation, reset and undo tokens: random, stored as hashes, single-use,
 * expiring. Issuing one voids the older ones of its kind.
 */
export class OneTimeTokens {
  readonly #codeKey: KeyObject;

  constructor(codeKey: string) {
    this.#codeKey = secretKey(codeKey);
  }

  async issue(
    repo: AccountsRepository,
    opts: { kind: TokenKind; profileId: string; email: string | null; seconds: number; now: number; duplicateProfile?: string | null },
  ): Promise<IssuedToken> {
    const token = randomToken();
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    const expiresAt = opts.now + opts.seconds * 1000;
    await repo.tokens.replace({
      kind: opts.kind,
      tokenHash: hashSecret(token),
      codeHash: this.#hashCode(code),
      profileId: opts.profileId,
      email: opts.email,
      duplicateProfile: opts.duplicateProfile ?? null,
      now: opts.now,
      expiresAt,
    });
    return { token, code, expiresAt };
  }

  /**
   * A link with no code (an undo link: `email-changes.ts`): only its secret's hash is stored. It
   * voids the older ones of its kind for the same address, not the person's other links.
   */
  async issueLink(repo: AccountsRepository, opts: { kind: TokenKind; profileId: string; email: string; seconds: number; now: number }): Promise<{ token: string; expiresAt: number }> {
    const token = randomToken();
    const expiresAt = opts.now + opts.seconds * 1000;
    await repo.tokens.replace({ kind: opts.kind, tokenHash: hashSecret(token), codeHash: null, profileId: opts.profileId, email: opts.email, now: opts.now, expiresAt });
    return { token, expiresAt };
  }

  /** The live token for a secret, or a 400 with `message` (used, expired and unknown look alike). */
  async live(repo: AccountsRepository, kind: TokenKind, token: string, now: number, message: string): Promise<TokenRecord> {
    const record = await repo.tokens.findLive(kind, hashSecret(token), now);
    if (!record) throw invalid(message);
    return record;
  }

  /** Uses the token up, atomically: of two simultaneous uses, the second gets the 400. */
  async consume(repo: AccountsRepository, record: TokenRecord, now: number, message: string): Promise<void> {
    if (!(await repo.tokens.consume(record.id, now))) throw invalid(message);
  }

  /**
   * Checks a typed code against the token. A wrong code counts; after five the token is void.
   * The refusal says how many tries are left (`details.triesLeft`).
   * The count is written outside any surrounding transaction's rollback by the caller's design:
   * call this before opening one.
   */
  async checkCode(repo: AccountsRepository, record: TokenRecord, code: string, now: number, message: string): Promise<void> {
    if (record.codeHash !== null && safeEqual(Buffer.from(record.codeHash, 'hex'), Buffer.from(this.#hashCode(code), 'hex'))) return;
    await repo.tokens.recordWrongCode(record.id, now, MAX_CODE_ATTEMPTS);
    // How many more wrong codes the token takes (read before this one was counted: a guess made
    // at the same moment may have used one more), so a page can say "2 tries left".
    throw new AppError('ValidationError', message, { path: 'token', triesLeft: Math.max(0, MAX_CODE_ATTEMPTS - record.attempts - 1) });
  }

  #hashCode(code: string): string {
    return createHmac('sha256', this.#codeKey).update(code).digest('hex');
  }
}

function invalid(message: string): AppError {
  return new AppError('ValidationError', message, { path: 'token' });
}
