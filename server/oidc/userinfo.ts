import type { WriteWatch } from '../../db/knex.ts';
import { hashSecret } from '../secrets.ts';
import { InvalidToken } from './errors.ts';
import { consentCovers, stillHolds, type Provider } from './provider.ts';

/** How long a UserInfo answer is kept: another process's revocation, logout or block is seen within it. */
const ANSWER_MS = 1000;
/** Past this many tokens, the kept answers start over. */
const MAX_ANSWERS = 10_000;

/**
 * The tables a UserInfo answer is read from: the token, its client, the consent, the profile
 * and its addresses. A write to any of them by this process (a revocation, a withdrawn consent,
 * a rejected client, a logout of every device, a password reset, a block, a deletion, a merge, a
 * changed name or address) drops every kept answer at once.
 */
export const USERINFO_TABLES = ['oidc_tokens', 'oidc_clients', 'oidc_consents', 'profiles', 'profile_emails'] as const;

/**
 * UserInfo's answers by access token (its hash), each kept for at most a second from the moment
 * its reading began (and never past the token's expiry). A change made by this process is seen
 * at once: any write to the tables an answer is read from drops them all (`WriteWatch`), and an
 * answer read while such a write was under way is not kept. A change made by another process
 * (the admin command, another server) is seen within the second. Refusals are never kept: each
 * is read again.
 */
export class UserinfoAnswers {
  readonly #writes: WriteWatch;
  readonly #now: () => number;
  readonly #kept = new Map<string, { answer: Record<string, unknown>; until: number; generation: number }>();

  constructor(writes: WriteWatch, now: () => number) {
    this.#writes = writes;
    this.#now = now;
  }

  async answer(tokenHash: string, read: () => Promise<{ answer: Record<string, unknown>; expiresAt: number }>): Promise<Record<string, unknown>> {
    const now = this.#now();
    const generation = this.#writes.generation();
    const kept = this.#kept.get(tokenHash);
    if (kept && now < kept.until && kept.generation === generation) return kept.answer;
    const { answer, expiresAt } = await read();
    if (this.#writes.settled() && this.#writes.generation() === generation) {
      if (this.#kept.size >= MAX_ANSWERS) this.#kept.clear();
      this.#kept.set(tokenHash, { answer, until: Math.min(now + ANSWER_MS, expiresAt), generation });
    } else {
      this.#kept.delete(tokenHash);
    }
    return answer;
  }
}

/**
 * `/oidc/userinfo`: the claims of a live access token; an expired, revoked or orphaned one is
 * `invalid_token` (401). Live means also: its client is still approved, its person still
 * consents to the client for its scopes, and may still hold it (`stillHolds`: `canHoldSession`
 * with the `tokenVersion` it was issued under: a password reset, a logout of every device, a
 * block, a deletion or a merge moves it on, and so ends every application's tokens). The answer
 * is kept for up to a second (`UserinfoAnswers`).
 */
export async function userinfo(p: Provider, accessToken: string): Promise<Record<string, unknown>> {
  const tokenHash = hashSecret(accessToken);
  return p.userinfoAnswers.answer(tokenHash, async () => {
    const found = await p.repo.findTokenWithClientStatus(tokenHash);
    const invalid = () => new InvalidToken('The access token is invalid, expired or revoked');
    const record = found?.token;
    if (!record || record.revokedAt !== null || record.expiresAt <= p.now()) throw invalid();
    if (found.clientStatus !== 'approved') throw invalid();
    if (!consentCovers(found.consentedScopes, record.scopes)) throw invalid();
    // The person's standing and their claims from one reading of the profile.
    const person = await p.accounts.profileWithClaims(record.profileId, record.scopes);
    if (!person || !stillHolds(person.profile, record.tokenVersion)) throw invalid();
    return { answer: { sub: person.profile.id, ...person.claims }, expiresAt: record.expiresAt };
  });
}
