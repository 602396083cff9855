/**
 * How multi-factor sign-in calls passkeys, through `PasskeyFactor` only (the contract in
 * `server/accounts/mfa/passkey-factor.ts`): the method is offered when `count > 0`, a challenge
 * asks request options under the pending sign-in's id, a verification hands the assertion with
 * the person and that id, a refusal counts toward the lockout, and `amr` says `hwk` or `swk`.
 * The passkey side here is a small in-memory stand-in that records what it was asked; the real
 * ceremonies (WebAuthn) are tested with the passkeys service. Everything else is real: the
 * database, the sessions, the MFA service.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AppError, type PasskeyAssertion } from '../../shared/index.ts';
import { migrateToLatest, openDatabase, openRateLimiterStore, type Db } from '../../db/knex.ts';
import { HumanVerifier } from '../../server/accounts/human-verification.ts';
import { CodeHasher } from '../../server/accounts/mfa/codes.ts';
import type { PasskeyFactor, PasskeyProof, PasskeySummary } from '../../server/accounts/mfa/passkey-factor.ts';
import { MfaRepository } from '../../server/accounts/mfa/repository.ts';
import { SecondFactors } from '../../server/accounts/mfa/second-factor.ts';
import { MfaService } from '../../server/accounts/mfa/service.ts';
import { SecretBox } from '../../server/secrets.ts';
import { OneTimeTokens } from '../../server/accounts/one-time-tokens.ts';
import type { AccountsDeps } from '../../server/accounts/service-base.ts';
import { DeviceCookies } from '../../server/accounts/device-cookies.ts';
import { PasswordHasher, TEST_SCRYPT } from '../../server/accounts/passwords.ts';
import { ProfileService } from '../../server/accounts/profiles.ts';
import { AccountsRepository } from '../../server/accounts/repository.ts';
import { SessionTokens } from '../../server/accounts/session-tokens.ts';
import { SessionService } from '../../server/accounts/sessions.ts';
import { SignInService } from '../../server/accounts/sign-in.ts';
import { SignUpService } from '../../server/accounts/sign-up.ts';
import type { Viewer } from '../../server/accounts/viewer.ts';
import { loadConfig } from '../../server/config.ts';
import { createLogger } from '../../server/logger.ts';
import { createMailer } from '../../server/mail/outbox.ts';
import { RateLimits } from '../../server/rate-limits.ts';
import { TestClock } from '../helpers/clock.ts';
import { dropTestDatabase, testDatabaseEnv } from '../helpers/database.ts';
import { OUTBOX_ON_ONE_MACHINE, tempDir } from '../helpers/server.ts';
import { PASSWORD } from '../helpers/users.ts';

/** The passkey side as the contract describes it, in memory, with a log of what it was asked. */
class RecordingPasskeys implements PasskeyFactor {
  readonly calls: Array<{ name: string; args: unknown[] }> = [];
  readonly keys = new Map<string, PasskeySummary[]>();
  backedUp = false;
  refuseWith: string | null = null;

  async count(userId: string) {
    return this.keys.get(userId)?.length ?? 0;
  }

  async list(userId: string) {
    return this.keys.get(userId) ?? [];
  }

  async registrationOptions(userId: string) {
    this.calls.push({ name: 'registrationOptions', args: [userId] });
    return { challenge: 'reg-challenge', rp: { name: 'Peer Review' }, user: { id: 'dXNlcg', name: userId, displayName: userId }, pubKeyCredParams: [] };
  }

  async register(userId: string, _response: unknown, name: string) {
    const summary = { credentialId: `cred-${this.calls.length}`, name, createdAt: 1, lastUsedAt: null };
    this.keys.set(userId, [...(this.keys.get(userId) ?? []), summary]);
    this.calls.push({ name: 'register', args: [userId, name] });
    return summary;
  }

  async remove(userId: string, credentialId: string) {
    const before = this.keys.get(userId) ?? [];
    this.keys.set(userId, before.filter((k) => k.credentialId !== credentialId));
    return before.length !== (this.keys.get(userId) ?? []).length;
  }

  async authenticationOptions(opts: { userId: string | null; challengeKey: string }) {
    this.calls.push({ name: 'authenticationOptions', args: [opts] });
    return { challenge: 'auth-challenge', allowCredentials: [], rpId: '127.0.0.1', timeout: 60_000, userVerification: 'preferred' as const };
  }

  async authenticate(response: unknown, opts: { userId: string | null; challengeKey: string }): Promise<PasskeyProof> {
    this.calls.push({ name: 'authenticate', args: [response, opts] });
    if (this.refuseWith) throw new AppError('ValidationError', this.refuseWith);
    const credentialId = this.keys.get(opts.userId ?? '')?.[0]?.credentialId ?? 'none';
    return { userId: opts.userId ?? '', credentialId, userVerified: true, backedUp: this.backedUp };
  }
}

const ASSERTION: PasskeyAssertion = {
  id: 'Y3JlZA',
  rawId: 'Y3JlZA',
  type: 'public-key',
  response: { clientDataJSON: 'e30', authenticatorData: 'AAAA', signature: 'c2ln' },
  clientExtensionResults: {},
};
const ATTESTATION = { id: 'Y3JlZA', rawId: 'Y3JlZA', type: 'public-key' as const, response: { clientDataJSON: 'e30', attestationObject: 'o2M' }, clientExtensionResults: {} };

let dir: string;
let db: Db;
let mfa: MfaService;
let signIn: SignInService;
let sessions: SessionService;
let signUp: SignUpService;
let passkeys: RecordingPasskeys;
let closeAll: () => Promise<void>;
const clock = new TestClock();
const origin = { address: '127.0.0.1' };

beforeAll(async () => {
  dir = await tempDir();
  const config = loadConfig({ DATA_DIR: dir, BASE_URL: 'http://127.0.0.1:9', LOG_LEVEL: 'silent', ...OUTBOX_ON_ONE_MACHINE, ...(await testDatabaseEnv(dir)) });
  db = openDatabase(config);
  await migrateToLatest(db);
  const logger = createLogger('silent');
  const store = openRateLimiterStore(db);
  const secret = 'a-test-secret-of-at-least-thirty-two-characters';
  const mailer = createMailer({ db, config, secret, logger, now: clock.now });
  const deps: AccountsDeps = {
    repo: new AccountsRepository(db),
    hasher: new PasswordHasher(undefined, TEST_SCRYPT),
    tokens: new SessionTokens(secret, config.baseUrl, clock.now),
    oneTime: new OneTimeTokens(`${secret}:codes`),
    verifier: new HumanVerifier(undefined, logger),
    devices: new DeviceCookies(secret),
    limits: new RateLimits(store),
    mailer,
    config,
    logger,
    now: clock.now,
  };
  const profiles = new ProfileService(deps);
  sessions = new SessionService(deps, profiles);
  signUp = new SignUpService(deps);
  passkeys = new RecordingPasskeys();
  const factorDeps = { mfa: new MfaRepository(db), passkeys, box: new SecretBox({ configuredKey: undefined, sessionSecret: secret }), codes: new CodeHasher(secret) };
  const factors = new SecondFactors(deps, factorDeps);
  mfa = new MfaService(deps, { ...factorDeps, factors, sessions, issuer: 'Peer Review' });
  signIn = new SignInService(deps, { sessions, factors, mfa: factorDeps.mfa, passkeys });
  closeAll = async () => {
    await mailer.settled(10_000);
    await mailer.close();
    await store.close();
    await db.destroy();
    await dropTestDatabase(dir);
  };
});
afterAll(() => closeAll());
beforeEach(() => {
  passkeys.calls.length = 0;
  passkeys.refuseWith = null;
});

let counter = 0;
async function person(): Promise<{ email: string; viewer: Viewer; refresh: string }> {
  counter += 1;
  const email = `passkey${counter}@example.org`;
  await signUp.createUser({ email, password: PASSWORD, fullname: 'Ada Lovelace', state: 'Active' });
  const outcome = await signIn.login({ id: email, password: PASSWORD }, origin, {});
  if (!('session' in outcome)) throw new Error('expected a session');
  // The session's refresh token, as the browser that signed in holds it: adding a factor needs it.
  return { email, viewer: await sessions.authenticate(outcome.session.accessToken), refresh: outcome.session.refreshToken };
}

describe('passkeys through PasskeyFactor', () => {
  it('adding the first passkey asks registrationOptions and register, turns MFA on and answers recovery codes', async () => {
    const { viewer, refresh } = await person();
    expect(await mfa.passkeyInit(viewer, refresh)).toMatchObject({ challenge: 'reg-challenge' });
    const added = await mfa.passkeyVerify(viewer, ATTESTATION, '  ', refresh);
    expect(added.passkey.name).toBe('Passkey');
    expect(added.recoveryCodes).toHaveLength(10);
    expect(passkeys.calls.map((c) => c.name)).toEqual(['registrationOptions', 'register']);
    expect(await mfa.status(viewer)).toMatchObject({ enabled: true, methods: ['passkey'], preferredMethod: 'passkey' });
  });

  it('sign-in: passkey is offered; the challenge and the verification name the pending sign-in; amr says hwk or swk', async () => {
    const { email, viewer, refresh } = await person();
    await mfa.passkeyVerify(viewer, ATTESTATION, 'Laptop', refresh);
    passkeys.calls.length = 0;
    const login = await signIn.login({ id: email, password: PASSWORD }, origin, {});
    if (!('pending' in login)) throw new Error('expected a pending sign-in');
    expect(login.pending).toMatchObject({ mfaMethods: ['passkey'], preferredMethod: 'passkey' });
    const options = await signIn.challenge({ mfaPendingToken: login.pending.mfaPendingToken, method: 'passkey' }, origin);
    expect(options).toMatchObject({ challenge: 'auth-challenge', rpId: '127.0.0.1' });
    // The ceremony is named by the pending sign-in's id (not its token, which is a secret).
    const challengeKey: string = (await db('mfa_pending').where({ profile_id: viewer.profileId }).first('id')).id;
    expect(passkeys.calls[0]).toEqual({ name: 'authenticationOptions', args: [{ userId: viewer.profileId, challengeKey }] });
    passkeys.backedUp = false;
    const done = await signIn.verify({ mfaPendingToken: login.pending.mfaPendingToken, method: 'passkey', code: ASSERTION }, origin);
    expect(passkeys.calls[1]).toEqual({ name: 'authenticate', args: [ASSERTION, { userId: viewer.profileId, challengeKey }] });
    expect(done.proof).toMatchObject({ method: 'passkey', passkey: { userId: viewer.profileId, backedUp: false } });
    const signedIn = await sessions.authenticate(done.session.accessToken);
    expect(await db('mfa_sign_ins').where({ session_id: signedIn.sessionId }).first('amr')).toEqual({ amr: JSON.stringify(['pwd', 'hwk', 'mfa']) });
  });

  it('a refused assertion keeps its reason and counts toward the lockout', async () => {
    const { email, viewer, refresh } = await person();
    await mfa.passkeyVerify(viewer, ATTESTATION, 'Phone', refresh);
    const login = await signIn.login({ id: email, password: PASSWORD }, origin, {});
    if (!('pending' in login)) throw new Error('expected a pending sign-in');
    passkeys.refuseWith = 'The passkey answer does not match the challenge';
    for (let i = 1; i <= 4; i += 1) {
      await expect(signIn.verify({ mfaPendingToken: login.pending.mfaPendingToken, method: 'passkey', code: ASSERTION }, origin)).rejects.toMatchObject({ message: 'The passkey answer does not match the challenge' });
    }
    await expect(signIn.verify({ mfaPendingToken: login.pending.mfaPendingToken, method: 'passkey', code: ASSERTION }, origin)).rejects.toMatchObject({
      name: 'TooManyError',
      message: expect.stringContaining('Account temporarily locked due to too many failed MFA attempts'),
    });
  });

  it('removing the last passkey turns MFA off; an unknown one is a 404; both need a recent proof', async () => {
    const { viewer, refresh } = await person();
    const { passkey } = await mfa.passkeyVerify(viewer, ATTESTATION, 'Key', refresh);
    await expect(mfa.passkeyDelete(viewer, 'no-such-key')).rejects.toMatchObject({ name: 'NotFoundError' });
    clock.advance(11 * 60 * 1000);
    await expect(mfa.passkeyDelete(viewer, passkey.credentialId)).rejects.toMatchObject({ name: 'ForbiddenError' });
    await expect(mfa.passkeyInit(viewer, refresh)).rejects.toMatchObject({ name: 'ForbiddenError' });
    await mfa.reauthenticate(viewer, { password: PASSWORD }, origin);
    expect(await mfa.passkeyDelete(viewer, passkey.credentialId)).toEqual({ status: 'ok', enabled: false });
    expect(await mfa.status(viewer)).toMatchObject({ enabled: false, methods: [], recoveryCodesRemaining: 0 });
  });
});
