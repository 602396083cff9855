import type { Knex } from 'knex';
import { normaliseEmail } from '../ids.ts';

/** The kinds of one-time token. */
export type TokenKind = 'activation' | 'email' | 'reset' | EmailUndoKind;

/** The undo links mailed to the old address after a change of a person's emails (`email-changes.ts`). */
export type EmailUndoKind = 'undo-email-added' | 'undo-email-removed' | 'undo-email-preferred';

export interface TokenRecord {
  id: number;
  kind: TokenKind;
  profileId: string;
  email: string | null;
  codeHash: string | null;
  attempts: number;
  createdAt: number;
  expiresAt: number;
  duplicateProfile: string | null;
}

interface TokenRow {
  id: number;
  kind: string;
  token_hash: string;
  used_at: number | null;
  profile_id: string;
  email: string | null;
  code_hash: string | null;
  attempts: number;
  created_at: number;
  expires_at: number;
  duplicate_profile: string | null;
}

function toToken(row: TokenRow): TokenRecord {
  return {
    id: row.id,
    kind: row.kind as TokenKind,
    profileId: row.profile_id,
    email: row.email,
    codeHash: row.code_hash,
    attempts: Number(row.attempts),
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    duplicateProfile: row.duplicate_profile,
  };
}

/** SQL for `account_tokens`: the one-time tokens of activation, email confirmation and password reset. Given its Knex (or a transaction). */
export class TokensRepository {
  readonly #db: Knex;

  constructor(db: Knex) {
    this.#db = db;
  }

  /**
   * Stores a new token of a kind for a profile and voids the older ones of that kind (for email
   * confirmations: of that address, so confirming two addresses at once works). One transaction:
   * of two tokens issued at once, one is the newer and voids the other, as when issued one after
   * the other (on PostgreSQL the loser is run again and then sees the winner's token).
   */
  async replace(token: {
    kind: TokenKind;
    tokenHash: string;
    codeHash: string | null;
    profileId: string;
    email: string | null;
    duplicateProfile?: string | null;
    now: number;
    expiresAt: number;
  }): Promise<void> {
    await this.#db.transaction(async (trx) => {
      const older = trx('account_tokens').where({ profile_id: token.profileId, kind: token.kind }).whereNull('used_at');
      // Email confirmations and undo links void only the older ones for the same address: each
      // change a person is told of keeps its own undo link.
      if (token.kind === 'email' || token.kind.startsWith('undo-')) older.where({ email: token.email });
      await older.update({ used_at: token.now });
      await trx('account_tokens').insert({
        kind: token.kind,
        token_hash: token.tokenHash,
        code_hash: token.codeHash,
        profile_id: token.profileId,
        email: token.email,
        duplicate_profile: token.duplicateProfile ?? null,
        created_at: token.now,
        expires_at: token.expiresAt,
      });
    });
  }

  /** A token that is neither used nor expired, by the hash of its secret. */
  async findLive(kind: TokenKind, tokenHash: string, now: number): Promise<TokenRecord | null> {
    const row = await this.#db<TokenRow>('account_tokens')
      .where({ kind, token_hash: tokenHash })
      .whereNull('used_at')
      .where('expires_at', '>', now)
      .first();
    return row ? toToken(row) : null;
  }

  /** The newest live token of a kind for a profile (an activation typed as its code: `ActivationService.linkFromCode`). */
  async findLiveOf(kind: TokenKind, profileId: string, now: number): Promise<TokenRecord | null> {
    const row = await this.#db<TokenRow>('account_tokens').where({ kind, profile_id: profileId }).whereNull('used_at').where('expires_at', '>', now).orderBy('id', 'desc').first();
    return row ? toToken(row) : null;
  }

  /** The live email-confirmation token of a profile for an address. */
  async findLiveEmail(profileId: string, email: string, now: number): Promise<TokenRecord | null> {
    const row = await this.#db<TokenRow>('account_tokens')
      .where({ kind: 'email', profile_id: profileId, email: normaliseEmail(email) })
      .whereNull('used_at')
      .where('expires_at', '>', now)
      .orderBy('id', 'desc')
      .first();
    return row ? toToken(row) : null;
  }

  /**
   * Uses a token up: `UPDATE … WHERE used_at IS NULL` must change exactly one row, so of two
   * simultaneous uses one succeeds and the other gets false.
   */
  async consume(id: number, now: number): Promise<boolean> {
    const changed = await this.#db('account_tokens')
      .where({ id })
      .whereNull('used_at')
      .where('expires_at', '>', now)
      .update({ used_at: now });
    return changed === 1;
  }

  /** Counts a wrong code; at `maxAttempts` wrong codes the token is void. */
  async recordWrongCode(id: number, now: number, maxAttempts: number): Promise<void> {
    await this.#db('account_tokens').where({ id }).increment('attempts', 1);
    await this.#db('account_tokens').where({ id }).whereNull('used_at').where('attempts', '>=', maxAttempts).update({ used_at: now });
  }

  /** Voids every outstanding token of a kind for a profile. */
  async voidAll(profileId: string, kind: TokenKind, now: number): Promise<void> {
    await this.#db('account_tokens').where({ profile_id: profileId, kind }).whereNull('used_at').update({ used_at: now });
  }

  /**
   * The token a secret was issued as, live or not (used, expired, voided): whom and which
   * address it was mailed to, so that an old link can ask for a new one (`resendFromLink`).
   */
  async findIssued(kind: TokenKind, tokenHash: string): Promise<TokenRecord | null> {
    const row = await this.#db<TokenRow>('account_tokens').where({ kind, token_hash: tokenHash }).first();
    return row ? toToken(row) : null;
  }
}
