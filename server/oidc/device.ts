import { createHmac, randomInt } from 'node:crypto';
import { AppError, DEVICE_CODE_GRANT, type DeviceRequest } from '../../shared/index.ts';
import { addressKey } from '../accounts/ids.ts';
import type { Viewer } from '../accounts/viewer.ts';
import type { RateLimitName } from '../rate-limits.ts';
import { hashSecret, randomToken } from '../secrets.ts';
import { checkScope } from './authorize.ts';
import { approvedClient, CLIENT_PARAMETERS, type ClientProof } from './client-auth.ts';
import type { CodeRecord } from './codes.ts';
import type { DeviceCodeRecord } from './device-repository.ts';
import { AccessDenied, AuthorizationPending, ExpiredToken, InvalidGrant, InvalidRequest, SlowDown, TooManyDeviceRequests, UnauthorizedClient } from './errors.ts';
import { usable } from './flow.ts';
import { scopeWords } from './interactions.ts';
import { checkOnce, sent, sidOf, type Provider } from './provider.ts';
import type { ClientRecord } from './repository.ts';

// The device authorization grant (RFC 8628): an application on a device without a browser, or a
// command line, asks for a device code and a user code (`POST /oidc/device/auth`); the person
// opens the device page (`/account/device`, `server/web/pages/device.ts`) in any browser, signs
// in, types the user code (or follows the link with it), sees which application asks for what
// and that the code is the one their device shows, and allows or denies it; meanwhile the device
// polls the token endpoint with its device code, and once allowed is given the tokens a code
// would give (an ID token, an access token, a refresh token with `offline_access`).
//
// The person's answer is a consent as the consent page's is (given or widened, in their activity
// log, withdrawn under Applications), and the device's tokens are redeemed once, as a code's are:
// the device code's hash is the code's identity (`CodeRecord.codeHash`), so its access token's
// row is its single use, a second collection is refused and revokes what the first gave (as
// node-oidc-provider does), and a consent withdrawn, a password reset or a sign-out everywhere
// between the answer and the collection voids it (`stillHolds`, `issueTokenOfCode`).

/** How long a device's request waits for the person and for its collection (RFC 8628 §3.2 `expires_in`). */
export const DEVICE_CODE_SECONDS = 10 * 60;
/** How long a device waits between two polls at first (RFC 8628 §3.2 `interval`); `slow_down` adds 5 s each time. */
export const DEVICE_POLL_SECONDS = 5;

/**
 * The user code's letters: consonants without vowels (no words spelled by chance), as RFC 8628
 * §6.1 suggests: 20 letters, eight of them, 34.6 bits, which the wrong-code limits keep out of a
 * guesser's reach (`RATE_LIMITS.deviceCodeAccount`, `deviceCodeAddress`; RFC 8628 §5.1).
 */
const USER_CODE_LETTERS = 'BCDFGHJKLMNPQRSTVWXZ';
const USER_CODE_LENGTH = 8;

/** The device authorization request's parameters; each may be sent once. */
const DEVICE_PARAMETERS = ['scope', ...CLIENT_PARAMETERS];

/** A user code as the device shows it: `BCDF-GHJK`. */
function shown(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/** A typed user code as it was made (letters only, upper case), or null when it cannot be one. */
export function normalisedUserCode(typed: string): string | null {
  const letters = typed.toUpperCase().replace(/[\s-]/g, '');
  if (letters.length !== USER_CODE_LENGTH || [...letters].some((c) => !USER_CODE_LETTERS.includes(c))) return null;
  return letters;
}

function newUserCode(): string {
  let code = '';
  for (let i = 0; i < USER_CODE_LENGTH; i += 1) code += USER_CODE_LETTERS[randomInt(USER_CODE_LETTERS.length)];
  return code;
}

/**
 * What a user code is stored as: an HMAC under the install's key (`Provider.pairwiseKey`), not a
 * plain hash, which a copy of the database would give back for its 34.6 bits in seconds.
 */
function userCodeHash(provider: Pick<Provider, 'pairwiseKey'>, code: string): string {
  return createHmac('sha256', provider.pairwiseKey).update(`device user code\n${code}`).digest('hex');
}

/**
 * `POST /oidc/device/auth` (RFC 8628 §3.1, §3.2): the client proves itself as at the token
 * endpoint (a public client by `client_id`), is approved (`invalid_client`) and registered for
 * the device grant (`unauthorized_client`); its scopes are checked as an authorization request's
 * with the consent page to come (`offline_access` kept for a client with refresh tokens).
 */
export async function deviceAuthorization(provider: Provider, form: Record<string, unknown>, proof: Omit<ClientProof, 'form'>, from: { address: string; verificationUri: string }) {
  checkOnce(form, DEVICE_PARAMETERS, { allowRedirect: false });
  const client = await approvedClient(provider, { form, ...proof });
  if (!client.grantTypes.includes(DEVICE_CODE_GRANT)) throw new UnauthorizedClient('This client is not registered for the device_code grant');
  const scopes = checkScope(client, sent(form, 'scope'), ['consent']);
  // Each request is a row for ten minutes: a flood from one address stops here (429 with `Retry-After`).
  await provider.limits.consume('deviceAuthorizationAddress', addressKey(from.address)).catch((error: unknown) => {
    throw error instanceof AppError && error.name === 'TooManyError' ? new TooManyDeviceRequests(error.message, Number(error.details?.retryAfter ?? 60)) : error;
  });
  const now = provider.now();
  const deviceCode = randomToken();
  const record: DeviceCodeRecord = {
    deviceCodeHash: hashSecret(deviceCode),
    clientId: client.id,
    scopes,
    status: 'pending',
    profileId: null,
    tokenVersion: null,
    authTime: null,
    consentedAt: null,
    sid: null,
    createdAt: now,
    expiresAt: now + DEVICE_CODE_SECONDS * 1000,
    polledAt: null,
    intervalSeconds: DEVICE_POLL_SECONDS,
  };
  // A user code a live request holds is made again (one in 2.56e10 per live request).
  const { verificationUri } = from;
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const userCode = newUserCode();
    if (await provider.repo.devices.insert(record, userCodeHash(provider, userCode))) {
      return {
        device_code: deviceCode,
        user_code: shown(userCode),
        verification_uri: verificationUri,
        verification_uri_complete: `${verificationUri}?user_code=${shown(userCode)}`,
        expires_in: DEVICE_CODE_SECONDS,
        interval: DEVICE_POLL_SECONDS,
      };
    }
  }
  throw new Error('deviceAuthorization: no free user code after five tries');
}

/**
 * The device grant at the token endpoint (RFC 8628 §3.4, §3.5), for an authenticated client
 * registered for it: its own request (another client's device code is `invalid_grant`, as an
 * unknown one), not expired (`expired_token`), not denied (`access_denied`), answered
 * (`authorization_pending`, or `slow_down` when polled within its interval, which then grows by
 * 5 s). An allowed request is answered as the code it stands for, which the token endpoint redeems.
 */
export async function deviceGrant(provider: Provider, client: ClientRecord, deviceCode: string | undefined, now: number): Promise<CodeRecord> {
  if (!deviceCode) throw new InvalidRequest('device_code is required');
  const found = await provider.repo.devices.findByDeviceCode(hashSecret(deviceCode));
  if (!found || found.clientId !== client.id) throw new InvalidGrant('Invalid device_code');
  if (!(found.expiresAt > now)) throw new ExpiredToken('The device code expired: start again');
  if (found.status === 'denied') throw new AccessDenied('The user denied the request');
  if (found.status === 'pending') {
    // One conditional statement, so polls sent at once cannot all pass as one.
    const slower = await provider.repo.devices.notePoll(found.deviceCodeHash, now);
    if (slower !== null) throw new SlowDown(`Polled too often: wait ${slower} seconds between requests`);
    throw new AuthorizationPending('The user has not answered yet');
  }
  return codeOf(found);
}

/** An allowed request as the code it stands for: its device code's hash is the code's identity. */
function codeOf(found: DeviceCodeRecord): CodeRecord {
  const { profileId, tokenVersion, authTime, consentedAt } = found;
  if (profileId === null || tokenVersion === null || authTime === null || consentedAt === null) throw new Error('deviceGrant: an allowed request without its person');
  return {
    codeHash: found.deviceCodeHash,
    clientId: found.clientId,
    profileId,
    redirectUriHash: '',
    codeChallenge: null,
    scopes: found.scopes,
    nonce: null,
    authTime,
    tokenVersion,
    sid: found.sid,
    consentedAt,
    issuedAt: found.createdAt,
    expiresAt: found.expiresAt,
  };
}

/**
 * The request a signed-in person's user code names, as the device page shows it: the client's
 * name and the scopes in words, with the code as the device shows it. Every code typed counts
 * against the person and the address it was typed from before it is compared, and a right one
 * is given back (as the email codes are: `deviceCodeAccount`, `deviceCodeAddress`, a 429 once
 * they run out), so no more than the limit are ever compared; a wrong one is a 404 however it is wrong.
 */
export async function findDeviceRequest(provider: Provider, viewer: Viewer, typed: string, address: string): Promise<{ request: DeviceCodeRecord; client: ClientRecord; shown: DeviceRequest }> {
  const person = signInPerson(viewer);
  const counted: Array<[RateLimitName, string]> = [
    ['deviceCodeAccount', `profile:${person.profileId}`],
    ['deviceCodeAddress', addressKey(address)],
  ];
  for (const [limit, key] of counted) await provider.limits.consume(limit, key);
  const code = normalisedUserCode(typed);
  const request = code === null ? null : await provider.repo.devices.findPending(userCodeHash(provider, code), provider.now());
  const client = request ? await provider.clients.find(request.clientId) : null;
  if (!request || !client || client.status !== 'approved' || code === null) {
    throw new AppError('NotFoundError', 'That code is not one a device is waiting with: check it, or start again on the device (codes last 10 minutes).', { path: 'userCode' });
  }
  for (const [limit, key] of counted) await provider.limits.refund(limit, key);
  const scopes = request.scopes.map((scope) => ({ scope, description: scopeWords(scope) }));
  return { request, client, shown: { userCode: shown(code), clientName: client.name, scopes, expiresAt: request.expiresAt } };
}

/**
 * The person's answer to a device's request. Allowing it is a consent (given or widened, in the
 * activity log) under which the device's tokens are issued; the browser session is recorded as
 * the client's (`sid`, back-channel logout), as a code's sign-in is. An answer given already (in
 * another tab) or to an expired request is refused (404, as a wrong code).
 */
export async function decideDevice(provider: Provider, viewer: Viewer, typed: string, approved: boolean, address: string): Promise<{ approved: boolean; clientName: string }> {
  const person = signInPerson(viewer);
  const { request, client } = await findDeviceRequest(provider, person, typed, address);
  const now = provider.now();
  const gone = () => new AppError('NotFoundError', 'This request was answered already, or it expired: start again on the device.', { path: 'userCode' });
  if (!approved) {
    if (!(await provider.repo.devices.decide(request.deviceCodeHash, { status: 'denied' }, now))) throw gone();
    provider.metrics.signIn('oidc', 'failure');
    return { approved: false, clientName: client.name };
  }
  const sid = sidOf(provider, person.sessionId, client.id);
  // The consent, the answer and the session's client together, or none of them (an answer lost
  // to another tab's rolls the consent back; a failure after the answer leaves no device allowed
  // without the session that back-channel logout would tell it about).
  const allowed = await provider.repo.transaction(async (repo) => {
    const { grantedAt, widened } = await repo.widenConsent(person.profileId, client.id, request.scopes, now);
    const decision = { status: 'approved' as const, profileId: person.profileId, tokenVersion: person.tokenVersion, authTime: person.authTime, consentedAt: grantedAt, sid };
    if (!(await repo.devices.decide(request.deviceCodeHash, decision, now))) throw gone();
    await repo.logouts.recordSessionClient({ sessionId: person.sessionId, clientId: client.id, profileId: person.profileId, sid, tokenVersion: person.tokenVersion }, now);
    return { widened };
  });
  if (allowed.widened) await provider.accounts.recordApplication(person.profileId, 'app:granted', { clientId: client.id, name: client.name, scopes: allowed.widened });
  provider.metrics.signIn('oidc', 'success');
  return { approved: true, clientName: client.name };
}

/** The person answering: never an impersonation, which signs nobody in to another application. */
function signInPerson(viewer: Viewer): Viewer {
  const person = usable(viewer);
  if (!person) throw new AppError('ForbiddenError', 'An impersonation cannot sign anyone in to a device');
  return person;
}

