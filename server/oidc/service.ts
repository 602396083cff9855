import { createHmac, type KeyObject } from 'node:crypto';
import type { DeviceClientInput, OidcClient, OidcClientInput, RegisterApplicationInput, RegisteredApplication, ResourceServerInput } from '../../shared/index.ts';
import type { Viewer } from '../accounts/viewer.ts';
import type { Config } from '../config.ts';
import type { Logger } from 'pino';
import { NO_METRICS, type Metrics } from '../metrics/events.ts';
import type { RateLimits } from '../rate-limits.ts';
import type { AccountsForSignIn } from './accounts-for-sign-in.ts';
import { LogoutNotifier } from './back-channel.ts';
import { OnceInAWhile } from './once-in-a-while.ts';
import { authorize } from './authorize.ts';
import { addClient, addDeviceClient, addResourceServer, issueRegistrationToken, listClients, removeClient, rotateSecret, setClientStatus } from './clients.ts';
import { endSession, type EndSession } from './end-session.ts';
import { introspect } from './introspect.ts';
import { deleteRegistration, readRegistration, register, registerForPerson, updateRegistration, type RegistrationAnswer } from './registration.ts';
import { consents, withdrawConsent } from './consents.ts';
import { decideDevice, deviceAuthorization, findDeviceRequest } from './device.ts';
import { pushAuthorizationRequest } from './pushed.ts';
import { discovery } from './discovery.ts';
import { loginPageUrl, mustSignIn, usable, wantsFreshSecondStep } from './flow.ts';
import { afterLogin, checkInteractionCsrf, confirm, consent, findInteraction, interactionCsrfToken } from './interactions.ts';
import { CodeSealer } from './codes.ts';
import { IssuedHere } from './issued-here.ts';
import { KeyStore } from './keys.ts';
import type { BackToClient, Outcome, Provider } from './provider.ts';
import type { Interaction, OidcRepository } from './repository.ts';
import { revoke } from './revoke.ts';
import { token, tokensOfCodes, type TokenAnswer } from './token.ts';
import { userinfo, USERINFO_TABLES } from './userinfo.ts';
import { KeptClients } from './kept-clients.ts';
import { KeptReadings, keptMsFor } from './kept-readings.ts';
import { secretKey } from '../secrets.ts';
import { Memo } from '../memo.ts';

export type { Outcome } from './provider.ts';

/** The tables `SessionService.authenticate` reads a session from (its row, its parent's, the profile, the roles). */
const SESSION_TABLES = ['sessions', 'profiles', 'group_members'] as const;
export type { TokenAnswer } from './token.ts';

/**
 * The sign-in provider: Authorization Code with PKCE (S256; required of public clients),
 * confidential clients (secrets, `private_key_jwt`), refresh tokens, introspection, revocation,
 * registration (RFC 7591, 7592), RP-initiated and back-channel logout, RS256 ID tokens. One
 * method per thing its callers (the HTTP routes, the pages, the procedures, the admin command)
 * ask; each endpoint's rules are in its own file (authorize, interactions, token, refresh,
 * introspect, revoke, registration, end-session, userinfo, clients, consents, discovery, keys).
 */
export class OidcService {
  readonly keys: KeyStore;
  /**
   * The browser sessions the authorization endpoint has checked, by a hash of both its cookies,
   * each kept for up to a second (none on PostgreSQL: `keptMsFor`) and never past the token's expiry (`KeptReadings`). Watched:
   * the tables `SessionService.authenticate` reads (the session's row and its parent's, the
   * profile, the roles), so a logout, a logout of every device, a reset or a block made through
   * this process drops them at once; another process's, within the second.
   */
  readonly sessions: KeptReadings<Viewer | null>;
  readonly #provider: Provider;
  readonly #csrfKey: KeyObject;

  /** Back-channel logout (`back-channel.ts`); the app starts it, a command-line process does not. */
  readonly logouts: LogoutNotifier;

  constructor(deps: { repo: OidcRepository; accounts: AccountsForSignIn; config: Config; csrfKey: string; log: Logger; limits: Pick<RateLimits, 'consume' | 'refund'>; metrics?: Pick<Metrics, 'signIn' | 'oidcTokens'>; now?: () => number }) {
    const now = deps.now ?? Date.now;
    const keptMs = keptMsFor(deps.config);
    this.keys = new KeyStore(deps.repo, deps.config.oidcKeyActivationSeconds, now);
    this.#provider = { repo: deps.repo, registry: deps.repo.registry, refreshTokens: deps.repo.refreshTokens, issuedHere: new IssuedHere(), tokensOfCodes: tokensOfCodes(deps.repo), logouts: deps.repo.logouts, lastUses: new OnceInAWhile(60_000), sessionClients: new OnceInAWhile(600_000), accounts: deps.accounts, keys: this.keys, clients: new KeptClients(deps.repo, now, keptMs),
      pairwiseKey: secretKey(createHmac('sha256', deps.csrfKey).update('oidc pairwise subjects').digest('base64url')),
      sids: new Memo(1000),
      codes: new CodeSealer(deps.csrfKey, deps.config.baseUrl),
      refreshAbsoluteSeconds: deps.config.oidcRefreshAbsoluteSeconds, refreshIdleSeconds: deps.config.oidcRefreshIdleSeconds,
      userinfoAnswers: new KeptReadings(deps.repo.watchWrites(USERINFO_TABLES, { insertsIgnored: ['oidc_tokens'] }), now, keptMs),
      // A consent row also goes when its client or its person is deleted (ON DELETE CASCADE), by a
      // statement that names only their table: those are watched too.
      consents: new KeptReadings(deps.repo.watchWrites(['oidc_consents', 'oidc_clients', 'profiles']), now, keptMs),
      people: new KeptReadings(deps.repo.watchWrites(['profiles', 'profile_emails']), now, keptMs),
      proofs: new KeptReadings(deps.repo.watchWrites(['mfa_sign_ins']), now, keptMs),
      limits: deps.limits, metrics: deps.metrics ?? NO_METRICS, issuer: deps.config.baseUrl, webUrl: deps.config.webUrl, now };
    this.#csrfKey = secretKey(deps.csrfKey);
    this.logouts = new LogoutNotifier(this.#provider, deps.log);
    this.sessions = new KeptReadings(deps.repo.watchWrites(SESSION_TABLES), now, keptMs);
  }

  get issuer(): string {
    return this.#provider.issuer;
  }

  // ---- clients and consents ----------------------------------------------------------------------

  addClient(input: OidcClientInput): Promise<OidcClient> {
    return addClient(this.#provider, input);
  }

  /** A command line or device client (operators: `npm run admin -- oidc-client device`), pending. */
  addDeviceClient(input: DeviceClientInput): Promise<OidcClient> {
    return addDeviceClient(this.#provider, input);
  }

  /** A resource server (operators: `npm run admin -- oidc-client resource-server`); its secret is answered once. */
  addResourceServer(input: ResourceServerInput): Promise<{ client: OidcClient; secret: string }> {
    return addResourceServer(this.#provider, input);
  }

  setClientStatus(id: string, status: OidcClient['status']): Promise<OidcClient> {
    return setClientStatus(this.#provider, id, status);
  }

  listClients(): Promise<OidcClient[]> {
    return listClients(this.#provider);
  }

  removeClient(id: string): Promise<void> {
    return removeClient(this.#provider, id);
  }

  consents(viewer: Viewer) {
    return consents(this.#provider, viewer.profileId);
  }

  /**
   * The app's tokens end; it is told by back-channel logout for each session it signed the person
   * in through (found by `logouts`, looked for now), or, with none left, once with `sub` alone
   * if it could act offline (`withdrawConsent`).
   */
  async withdrawConsent(viewer: Viewer, clientId: string): Promise<void> {
    const client = await this.#provider.clients.find(clientId);
    const notice = client ? await this.logouts.offlineNotice(viewer.profileId, client) : null;
    await withdrawConsent(this.#provider, viewer.profileId, clientId, notice);
    this.logouts.kick();
    // The person's activity log: the application revoked, by its name while it has one.
    await this.#provider.accounts.recordApplication(viewer.profileId, 'app:revoked', { clientId, name: client?.name ?? clientId });
  }

  // ---- endpoints -----------------------------------------------------------------------------------

  discovery(): Record<string, unknown> {
    return discovery(this.#provider.issuer);
  }

  /** `address`: the client address the request came from (`authorize`'s rate limit). */
  authorize(query: Record<string, unknown>, viewer: Viewer | null, address: string): Promise<Outcome> {
    return authorize(this.#provider, query, viewer, address);
  }

  token(form: Record<string, unknown>, authorization?: string): Promise<TokenAnswer> {
    return token(this.#provider, form, { authorization, endpoint: `${this.issuer}/oidc/token` });
  }

  introspect(form: Record<string, unknown>, authorization?: string): Promise<Record<string, unknown>> {
    return introspect(this.#provider, form, { authorization, endpoint: `${this.issuer}/oidc/introspect` });
  }

  userinfo(accessToken: string): Promise<Record<string, unknown>> {
    return userinfo(this.#provider, accessToken);
  }

  revoke(form: Record<string, unknown>, authorization?: string): Promise<void> {
    return revoke(this.#provider, form, { authorization, endpoint: `${this.issuer}/oidc/revoke` });
  }

  /** `POST /oidc/par` (RFC 9126): an authorization request pushed before the browser is sent; its `request_uri`. */
  pushAuthorizationRequest(form: Record<string, unknown>, authorization: string | undefined) {
    return pushAuthorizationRequest(this.#provider, form, { authorization, endpoint: `${this.issuer}/oidc/par` });
  }

  // ---- devices (RFC 8628) ------------------------------------------------------------------------------

  /** `POST /oidc/device/auth`: a device's codes, and where the person goes to answer (`verificationUri`, the device page). */
  deviceAuthorization(form: Record<string, unknown>, authorization: string | undefined, from: { address: string; verificationUri: string }) {
    return deviceAuthorization(this.#provider, form, { authorization, endpoint: `${this.issuer}/oidc/device/auth` }, from);
  }

  /** The request a user code typed by a signed-in person names, as the device page shows it. */
  async deviceRequest(viewer: Viewer, userCode: string, address: string) {
    return (await findDeviceRequest(this.#provider, viewer, userCode, address)).shown;
  }

  /** The person's answer to a device's request. */
  decideDevice(viewer: Viewer, userCode: string, approved: boolean, address: string) {
    return decideDevice(this.#provider, viewer, userCode, approved, address);
  }

  // ---- registration (RFC 7591, 7592) and client credentials -----------------------------------------

  register(bearer: string | undefined, body: unknown): Promise<RegistrationAnswer> {
    return register(this.#provider, bearer, body);
  }

  readRegistration(clientId: string, bearer: string | undefined): Promise<RegistrationAnswer> {
    return readRegistration(this.#provider, clientId, bearer);
  }

  updateRegistration(clientId: string, bearer: string | undefined, body: unknown): Promise<RegistrationAnswer> {
    return updateRegistration(this.#provider, clientId, bearer, body);
  }

  deleteRegistration(clientId: string, bearer: string | undefined): Promise<RegistrationAnswer> {
    return deleteRegistration(this.#provider, clientId, bearer);
  }

  /** A person registers an application from the account pages, into the approval queue. */
  registerForPerson(input: RegisterApplicationInput, by: { profileId: string; address: string }): Promise<RegisteredApplication> {
    return registerForPerson(this.#provider, input, by);
  }

  /** An initial access token for the registration endpoint (`npm run admin -- oidc-client registration-token`). */
  issueRegistrationToken(opts: { approved: boolean; expiresInSeconds: number }): Promise<{ token: string; expiresAt: number }> {
    return issueRegistrationToken(this.#provider, opts);
  }

  /** A new secret for a confidential client; the old ones stay good for `overlapSeconds`. */
  rotateSecret(clientId: string, overlapSeconds: number): Promise<string> {
    return rotateSecret(this.#provider, clientId, overlapSeconds);
  }

  /** `/oidc/logout` (RP-initiated logout): whether to ask first, and where the browser goes after. */
  endSession(params: Record<string, unknown>, viewer: Viewer | null): Promise<EndSession> {
    return endSession(this.#provider, params, viewer);
  }

  // ---- interactions (the login and consent pages, and their JSON twins) ----------------------------

  /** A live interaction, or an `invalid_request` page. */
  interaction(id: string | undefined): Promise<{ interaction: Interaction; client: OidcClient }> {
    return findInteraction(this.#provider, id);
  }

  /** Whether the login page asks for the second step even in a remembered browser (`acr_values=2`, `prompt=login` with `max_age`). */
  wantsFreshSecondStep(interaction: Interaction): boolean {
    return wantsFreshSecondStep(interaction);
  }

  /**
   * Whether the person must sign in (again) first, a second factor included (`acr_values=2`); an
   * impersonation session never signs anyone in to another application.
   */
  mustSignIn(interaction: Interaction, viewer: Viewer | null): Promise<boolean> {
    return mustSignIn(this.#provider, interaction, usable(viewer));
  }

  /** Where the consent page sends someone who must sign in (again) first (`flow.ts` `loginPageUrl`). */
  loginPageUrl(interaction: Interaction, signedIn: boolean): string {
    return loginPageUrl(this.#provider, interaction, signedIn);
  }

  afterLogin(interactionId: string, viewer: Viewer): Promise<Outcome> {
    return afterLogin(this.#provider, interactionId, viewer);
  }

  confirm(interactionId: string, viewer: Viewer, fromBrowser: boolean) {
    return confirm(this.#provider, interactionId, viewer, fromBrowser);
  }

  consent(interactionId: string, viewer: Viewer | null, approved: boolean): Promise<BackToClient> {
    return consent(this.#provider, interactionId, viewer, approved);
  }

  interactionCsrfToken(browserSecret: string, interactionId: string): string {
    return interactionCsrfToken(this.#csrfKey, browserSecret, interactionId);
  }

  checkInteractionCsrf(browserSecret: string | undefined, interactionId: string, token: string | undefined): void {
    checkInteractionCsrf(this.#csrfKey, browserSecret, interactionId, token);
  }

  /** Deletes what has expired (interactions, access tokens, refresh tokens and the registry's). */
  sweep(): Promise<void> {
    return this.#provider.repo.sweep(this.#provider.now());
  }
}
