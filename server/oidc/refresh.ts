import { OIDC_TOKEN_SECONDS, type OidcScope } from '../../shared/index.ts';
import { hashSecret, randomToken } from '../secrets.ts';
import { InvalidGrant, InvalidRequest, InvalidScope } from './errors.ts';
import { consentCovers, findConsent, personWithClaims, stillHolds, lastUseDue, subjectOf, type Provider } from './provider.ts';
import type { RefreshRecord } from './refresh-repository.ts';
import type { CodeRecord } from './codes.ts';
import type { ClientRecord } from './repository.ts';
import { idTokenMeanwhile, type TokenAnswer } from './id-token.ts';

// Refresh tokens (RFC 6749 §6, OpenID Connect Core §12), for a client registered for the
// `refresh_token` grant whose person granted `offline_access` on a consent page. Every use
// rotates the token; a rotated one used again revokes its whole family (RFC 9700 §4.14.2). A
// family is bound to its consent and to its person's `tokenVersion`: withdrawing the consent,
// a reset, logout everywhere, a block or a merge end it.

/** Every refusal of a refresh token says the same, so a client learns nothing about why. */
const invalidRefresh = () => new InvalidGrant('Invalid or expired refresh token');

/** A family's lifetimes: the client's own, or the provider's defaults. */
function lifetimesOf(provider: Provider, client: ClientRecord): { absolute: number; idle: number } {
  return { absolute: (client.refreshAbsoluteSeconds ?? provider.refreshAbsoluteSeconds) * 1000, idle: (client.refreshIdleSeconds ?? provider.refreshIdleSeconds) * 1000 };
}

/** The first refresh token of a family (stored as `tokenHash`), issued with a code's access token. */
export function familyRecord(provider: Provider, client: ClientRecord, code: CodeRecord, familyId: string, tokenHash: string, now: number): RefreshRecord {
  const { absolute, idle } = lifetimesOf(provider, client);
  const familyExpiresAt = now + absolute;
  return {
    tokenHash,
    familyId,
    clientId: client.id,
    profileId: code.profileId,
    scopes: code.scopes,
    tokenVersion: code.tokenVersion,
    authTime: code.authTime,
    sid: code.sid,
    createdAt: now,
    familyExpiresAt,
    expiresAt: Math.min(familyExpiresAt, now + idle),
    usedAt: null,
    revokedAt: null,
  };
}

/**
 * The `refresh_token` grant: the named checks below, in this order, then the token is rotated
 * and a new access token (and ID token) issued.
 */
export async function refreshGrant(provider: Provider, client: ClientRecord, presented: string | undefined, scope: string | undefined): Promise<TokenAnswer> {
  if (!presented) throw new InvalidRequest('refresh_token is required');
  const now = provider.now();
  const record = await checkRefreshToken(provider, client, presented, now);
  const scopes = checkNarrowing(record, scope);
  const { profile, claims } = await checkStillHonoured(provider, record);
  const next = randomToken();
  const { idle } = lifetimesOf(provider, client);
  const rotated: RefreshRecord = { ...record, tokenHash: hashSecret(next), createdAt: now, expiresAt: Math.min(record.familyExpiresAt, now + idle), usedAt: null, revokedAt: null };
  const accessToken = randomToken();
  const signing = scopes.includes('openid')
    ? idTokenMeanwhile(provider, client, { profileId: record.profileId, authTime: record.authTime, nonce: null, sid: record.sid }, { sub: subjectOf(provider, client, profile.id), ...claims }, accessToken, now)
    : undefined;
  // One statement (`rotate`) stores the successor and the new access token and marks the used
  // token, or, for a token rotated or revoked meanwhile, marks nothing: the family is then
  // revoked, what the statement stored included. Of two uses at once, one marks the token and
  // the other is a reuse. A process that stops (or a write that fails) before the statement
  // leaves the used token live, for the client to try again, and nothing new stored. The
  // client's last use, when due (to the minute), is noted first.
  const use = lastUseDue(provider, record.profileId, client.id, now);
  try {
    if (use.due) await provider.repo.noteUse(record.profileId, client.id, now);
  } catch (error) {
    use.undo();
    throw error;
  }
  const access = { tokenHash: hashSecret(accessToken), scopes, expiresAt: now + OIDC_TOKEN_SECONDS * 1000 };
  if (!(await provider.refreshTokens.rotate(rotated, access, record, now))) {
    await provider.refreshTokens.revokeFamily(record.familyId, now);
    throw invalidRefresh();
  }
  provider.issuedHere.remember(rotated);
  const answer: TokenAnswer = { access_token: accessToken, token_type: 'Bearer', expires_in: OIDC_TOKEN_SECONDS, refresh_token: next, scope: scopes.join(' ') };
  if (signing) answer.id_token = await signing;
  return answer;
}

/**
 * checkRefreshToken: known (by its hash) and this client's (another client's token is refused
 * and nothing of its owner's is revoked), not revoked, not expired (its family's end or its own
 * idle end), and not rotated already: a rotated token used again revokes its family, as does a
 * token whose family was revoked without it (stored while the revocation ran). A token this
 * process issued is not read back (`IssuedHere`): whether it was rotated or revoked since, or
 * its family revoked, the rotation's statement finds, with the same outcome.
 */
async function checkRefreshToken(provider: Provider, client: ClientRecord, presented: string, now: number): Promise<RefreshRecord> {
  const tokenHash = hashSecret(presented);
  const record = provider.issuedHere.take(tokenHash, client.id) ?? (await provider.refreshTokens.find(tokenHash));
  if (!record || record.clientId !== client.id || record.revokedAt !== null) throw invalidRefresh();
  if (record.usedAt !== null || record.familyRevoked) {
    await provider.refreshTokens.revokeFamily(record.familyId, now);
    throw invalidRefresh();
  }
  if (record.expiresAt <= now || record.familyExpiresAt <= now) throw invalidRefresh();
  return record;
}

/** checkNarrowing: a `scope` sent asks for some of the family's scopes, never more (`invalid_scope`). */
function checkNarrowing(record: RefreshRecord, scope: string | undefined): OidcScope[] {
  // An empty `scope` is none sent (as node-oidc-provider reads it), not a request for no scope at all.
  if (scope === undefined || scope.trim() === '') return record.scopes;
  const asked = [...new Set(scope.split(' ').filter(Boolean))];
  const outside = asked.find((s) => !(record.scopes as string[]).includes(s));
  if (outside !== undefined) throw new InvalidScope(`The refresh token was not granted the scope ${outside}`);
  return asked as OidcScope[];
}

/**
 * checkStillHonoured: the person still holds sessions under the family's `tokenVersion`, and
 * still consents to its scopes, `offline_access` included. A family that fails is revoked.
 */
async function checkStillHonoured(provider: Provider, record: RefreshRecord) {
  const person = await personWithClaims(provider, record.profileId, record.scopes);
  const consented = await findConsent(provider, record.profileId, record.clientId);
  if (!person || !stillHolds(person.profile, record.tokenVersion) || !consentCovers(consented?.scopes ?? null, record.scopes)) {
    await provider.refreshTokens.revokeFamily(record.familyId, provider.now());
    throw invalidRefresh();
  }
  return person;
}
