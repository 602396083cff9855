import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { SignJWT } from 'jose';
import type { Knex } from 'knex';
import {
  AppError,
  OIDC_CODE_SECONDS,
  OIDC_SCOPES,
  OIDC_TOKEN_SECONDS,
  OidcScope,
  type OidcClient,
  type OidcClientInput,
} from '../../shared/index.ts';
import { AccountsRepository, type ProfileRecord } from '../accounts/repository.ts';
import { ACTIVE_STATES, preferredEmail, type Viewer } from '../accounts/service.ts';
import type { Config } from '../config.ts';
import { KeyStore } from './keys.ts';
import { OidcRepository, type AuthorizationParams, type Interaction } from './repository.ts';

/** How long a pending authorization request (the login and consent pages) stays valid. */
const INTERACTION_SECONDS = 10 * 60;

/**
 * A protocol error. `page` errors are shown to the person (an unknown client or redirect URI
 * must never be redirected to); the others go back to the client's redirect URI, or, at the
 * token endpoint, as JSON.
 */
export class OAuthError extends Error {
  readonly error: string;
  readonly status: number;

  constructor(error: string, description: string, status = 400) {
    super(description);
    this.error = error;
    this.status = status;
  }

  /** `error_description` is printable ASCII without `"` or `\`, as RFC 6749 asks. */
  get description(): string {
    return this.message.replace(/[^\x20-\x21\x23-\x5B\x5D-\x7E]/g, ' ');
  }
}

/** What `/oidc/authorize` and the pages answer: a page with a message, or a redirect. */
export type Outcome = { page: string; status: number } | { redirect: string };

export interface TokenAnswer {
  access_token: string;
  id_token: string;
  token_type: 'Bearer';
  expires_in: number;
}

const sha256 = (value: string) => createHash('sha256').update(value).digest();
const hashSecret = (value: string) => sha256(value).toString('hex');
const randomSecret = () => randomBytes(32).toString('base64url');

/** The sign-in provider: Authorization Code with PKCE (S256), public clients, RS256 ID tokens. */
export class OidcService {
  readonly #db: Knex;
  readonly #config: Config;
  readonly #now: () => number;
  readonly #csrfKey: string;
  readonly keys: KeyStore;

  constructor(deps: { db: Knex; config: Config; csrfKey: string; now?: () => number }) {
    this.#db = deps.db;
    this.#config = deps.config;
    this.#csrfKey = deps.csrfKey;
    this.#now = deps.now ?? Date.now;
    this.keys = new KeyStore(new OidcRepository(deps.db), deps.config.oidcKeyActivationSeconds, this.#now);
  }

  get issuer(): string {
    return this.#config.baseUrl;
  }

  #repo(): OidcRepository {
    return new OidcRepository(this.#db);
  }

  // ---- client registry (operators and super users) -------------------------------------------

  async addClient(input: OidcClientInput): Promise<OidcClient> {
    const now = this.#now();
    const repo = this.#repo();
    if (await repo.findClient(input.id)) throw new AppError('ValidationError', `The client ${input.id} already exists`, { path: 'id' });
    const client: OidcClient = { ...input, status: 'pending', createdAt: now, updatedAt: now };
    await repo.insertClient(client);
    return client;
  }

  async setClientStatus(id: string, status: OidcClient['status']): Promise<OidcClient> {
    if (!(await this.#repo().setClientStatus(id, status, this.#now()))) throw new AppError('NotFoundError', `Client Not Found: ${id}`);
    return (await this.#repo().findClient(id)) as OidcClient;
  }

  listClients(): Promise<OidcClient[]> {
    return this.#repo().listClients();
  }

  async removeClient(id: string): Promise<void> {
    if (!(await this.#repo().deleteClient(id))) throw new AppError('NotFoundError', `Client Not Found: ${id}`);
  }

  // ---- discovery -------------------------------------------------------------------------------

  discovery(): Record<string, unknown> {
    const base = this.issuer;
    return {
      issuer: base,
      authorization_endpoint: `${base}/oidc/authorize`,
      token_endpoint: `${base}/oidc/token`,
      userinfo_endpoint: `${base}/oidc/userinfo`,
      jwks_uri: `${base}/oidc/jwks`,
      revocation_endpoint: `${base}/oidc/revoke`,
      scopes_supported: Object.keys(OIDC_SCOPES),
      claims_supported: ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'at_hash', 'name', 'email', 'email_verified'],
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      revocation_endpoint_auth_methods_supported: ['none'],
      claims_parameter_supported: false,
      request_parameter_supported: false,
      request_uri_parameter_supported: false,
      authorization_response_iss_parameter_supported: true,
    };
  }

  // ---- authorization -----------------------------------------------------------------------------

  /**
   * `/oidc/authorize`: the checks run in the order below; the first three answer a page (an
   * unknown client or redirect URI is never redirected to), the rest redirect with `error`,
   * `error_description`, `state` and `iss`. Then the person signs in and consents, unless a
   * session and a consent exist already.
   */
  async authorize(query: Record<string, unknown>, viewer: Viewer | null): Promise<Outcome> {
    const param = (name: string): string | undefined => (typeof query[name] === 'string' ? (query[name] as string) : undefined);
    let client: OidcClient;
    try {
      // RFC 6749 §3.1: no parameter may be sent twice. Which client or redirect URI was meant is
      // then unknown, so those two get a page; the others go back to the client.
      checkOnce(query, ['client_id', 'redirect_uri']);
      client = await this.#checkClient(param('client_id'));
      checkApproved(client);
      checkRedirectUri(client, param('redirect_uri'));
    } catch (error) {
      if (error instanceof OAuthError) return { page: error.message, status: 400 };
      throw error;
    }
    const redirectUri = param('redirect_uri') as string;
    const state = param('state');
    try {
      checkOnce(query, AUTHORIZATION_PARAMETERS);
      checkResponseType(param('response_type'));
      const prompt = checkPrompt(param('prompt'));
      const scopes = checkScope(client, param('scope'));
      const codeChallenge = checkPkce(param('code_challenge'), param('code_challenge_method'));
      const maxAge = checkMaxAge(param('max_age'));
      checkLengths({ state, nonce: param('nonce') });
      const params: AuthorizationParams = {
        clientId: client.id,
        redirectUri,
        scopes,
        state,
        nonce: param('nonce'),
        codeChallenge,
        prompt,
        maxAge,
      };
      const now = this.#now();
      const interaction: Interaction = {
        id: randomSecret(),
        params,
        profileId: null,
        authenticatedAt: null,
        expiresAt: now + INTERACTION_SECONDS * 1000,
        completedAt: null,
      };
      // Stored only when a page has to continue it: a person with a session and a consent goes
      // straight back with a code, and their request needs no row.
      const store = () => this.#repo().insertInteraction(interaction.id, params, now, interaction.expiresAt);
      return await this.#next(interaction, usable(viewer), store);
    } catch (error) {
      if (error instanceof OAuthError) return { redirect: this.#errorRedirect(redirectUri, error, state) };
      throw error;
    }
  }

  /** checkClient: `client_id` names a registered client. */
  async #checkClient(clientId: string | undefined): Promise<OidcClient> {
    const client = clientId ? await this.#repo().findClient(clientId) : null;
    if (!client) throw new OAuthError('invalid_client', 'Invalid client_id');
    return client;
  }

  /**
   * Whether the person must sign in (again) before this request can go on: no session;
   * `prompt=login` without a sign-in during this request; or a session older than `max_age`
   * (a sign-in during this request always satisfies `max_age`, even 0).
   */
  needsLogin(interaction: Interaction, viewer: Viewer | null): viewer is null {
    if (!viewer) return true;
    const loggedInHere = interaction.profileId === viewer.profileId && interaction.authenticatedAt !== null;
    if (loggedInHere) return false;
    const { params } = interaction;
    if (params.prompt.includes('login')) return true;
    return params.maxAge !== undefined && this.#now() - viewer.authTime > params.maxAge * 1000;
  }

  /** The sign-in time the ID token reports: this request's sign-in, or the session's. */
  #authTime(interaction: Interaction, viewer: Viewer): number {
    const loggedInHere = interaction.profileId === viewer.profileId && interaction.authenticatedAt !== null;
    return loggedInHere ? (interaction.authenticatedAt as number) : viewer.authTime;
  }

  /** The login page of an interaction. */
  loginPageUrl(interactionId: string): string {
    return `${this.#config.webUrl}/oidc/login?interaction=${interactionId}`;
  }

  /**
   * Where an interaction goes next: the login page, the consent page, or back to the client.
   * `store` is given for a request not stored yet: it is stored before a page is shown, and a
   * code issued at once has no interaction to complete.
   */
  async #next(interaction: Interaction, viewer: Viewer | null, store?: () => Promise<void>): Promise<Outcome> {
    const { params } = interaction;
    if (this.needsLogin(interaction, viewer)) {
      if (params.prompt.includes('none')) throw new OAuthError('login_required', 'The user is not signed in');
      await store?.();
      return { redirect: this.loginPageUrl(interaction.id) };
    }
    const consented = await this.#repo().findConsent(viewer.profileId, params.clientId);
    const covered = consented !== null && params.scopes.every((s) => consented.includes(s));
    if (!covered || params.prompt.includes('consent')) {
      if (params.prompt.includes('none')) throw new OAuthError('consent_required', 'The user has not consented');
      await store?.();
      return { redirect: `${this.#config.webUrl}/oidc/consent?interaction=${interaction.id}` };
    }
    return { redirect: await this.#issueCode(interaction, viewer, this.#authTime(interaction, viewer), store === undefined) };
  }

  /**
   * Issues the single-use code (stored as a hash, bound to client, redirect URI and challenge,
   * and to the person's `tokenVersion`: a reset or logout-all before it is redeemed voids it).
   * A stored interaction is completed first, so a second answer to it (a double submit) fails.
   */
  async #issueCode(interaction: Interaction, person: Pick<Viewer, 'profileId' | 'tokenVersion'>, authTime: number, stored = true): Promise<string> {
    const repo = this.#repo();
    const now = this.#now();
    if (stored && !(await repo.completeInteraction(interaction.id, now))) {
      throw new OAuthError('invalid_request', 'This sign-in request was already answered');
    }
    const code = randomSecret();
    const { params } = interaction;
    await repo.insertCode(
      {
        codeHash: hashSecret(code),
        clientId: params.clientId,
        profileId: person.profileId,
        redirectUri: params.redirectUri,
        codeChallenge: params.codeChallenge,
        scopes: params.scopes,
        nonce: params.nonce ?? null,
        authTime,
        tokenVersion: person.tokenVersion,
        expiresAt: now + OIDC_CODE_SECONDS * 1000,
      },
      now,
    );
    return this.#redirect(params.redirectUri, { code, state: params.state });
  }

  #redirect(redirectUri: string, values: Record<string, string | undefined>): string {
    const url = new URL(redirectUri);
    for (const [key, value] of Object.entries({ ...values, iss: this.issuer })) if (value !== undefined) url.searchParams.set(key, value);
    return url.toString();
  }

  #errorRedirect(redirectUri: string, error: OAuthError, state: string | undefined): string {
    return this.#redirect(redirectUri, { error: error.error, error_description: error.description, state });
  }

  /** A live interaction, or an OAuthError page. */
  async interaction(id: string | undefined): Promise<{ interaction: Interaction; client: OidcClient }> {
    const interaction = id ? await this.#repo().findInteraction(id, this.#now()) : null;
    const client = interaction ? await this.#repo().findClient(interaction.params.clientId) : null;
    if (!interaction || !client) throw new OAuthError('invalid_request', 'This sign-in request has expired or was already answered. Please start again from the application.');
    return { interaction, client };
  }

  /**
   * An interaction someone signed in to on its login page is theirs: nobody else may answer it
   * (a code for another person must not come out of a request a browser started for this one).
   */
  #checkOwner(interaction: Interaction, viewer: Viewer | null): void {
    if (viewer && interaction.profileId !== null && interaction.profileId !== viewer.profileId) {
      throw new AppError('ForbiddenError', 'This sign-in request belongs to another person');
    }
  }

  /** After the login page signed the person in: on to consent, or back to the client. */
  async afterLogin(interactionId: string, viewer: Viewer): Promise<Outcome> {
    const { interaction } = await this.interaction(interactionId);
    const now = this.#now();
    await this.#repo().markAuthenticated(interaction.id, viewer.profileId, now);
    return this.#resume({ ...interaction, profileId: viewer.profileId, authenticatedAt: now }, viewer);
  }

  async #resume(interaction: Interaction, viewer: Viewer | null): Promise<Outcome> {
    try {
      return await this.#next(interaction, usable(viewer));
    } catch (error) {
      if (!(error instanceof OAuthError)) throw error;
      await this.#repo().completeInteraction(interaction.id, this.#now());
      return { redirect: this.#errorRedirect(interaction.params.redirectUri, error, interaction.params.state) };
    }
  }

  /** `POST /oidc/authorize/confirm`: already consented → the redirect; otherwise what to ask. */
  async confirm(interactionId: string, viewer: Viewer): Promise<{ redirectUri: string } | { client: { clientName: string }; scopes: string[] }> {
    const { interaction, client } = await this.interaction(interactionId);
    this.#checkOwner(interaction, usable(viewer));
    // A fresh sign-in is needed first (prompt=login, max_age): the frontend goes to the login page.
    if (this.needsLogin(interaction, usable(viewer))) return { redirectUri: this.loginPageUrl(interaction.id) };
    const outcome = await this.#resume(interaction, viewer);
    if ('redirect' in outcome && !outcome.redirect.startsWith(`${this.#config.webUrl}/oidc/`)) return { redirectUri: outcome.redirect };
    return { client: { clientName: client.name }, scopes: interaction.params.scopes };
  }

  /** The consent page's answer: "Allow" saves the consent and returns to the client with a code. */
  async consent(interactionId: string, viewer: Viewer | null, approved: boolean): Promise<{ redirect: string }> {
    const { interaction } = await this.interaction(interactionId);
    this.#checkOwner(interaction, usable(viewer));
    const { params } = interaction;
    if (!approved) {
      await this.#repo().completeInteraction(interaction.id, this.#now());
      return { redirect: this.#errorRedirect(params.redirectUri, new OAuthError('access_denied', 'The user denied the request'), params.state) };
    }
    const person = usable(viewer);
    if (this.needsLogin(interaction, person)) throw new AppError('UnauthorizedError', 'Please sign in (again) before consenting.');
    const merged = [...new Set([...((await this.#repo().findConsent(person.profileId, params.clientId)) ?? []), ...params.scopes])];
    await this.#repo().saveConsent(person.profileId, params.clientId, merged as OidcScope[], this.#now());
    try {
      return { redirect: await this.#issueCode(interaction, person, this.#authTime(interaction, person)) };
    } catch (error) {
      if (error instanceof OAuthError) return { redirect: this.#errorRedirect(params.redirectUri, error, params.state) };
      throw error;
    }
  }

  /** A CSRF token for a page's form, bound to the browser (its cookie) and to the interaction. */
  csrfToken(browserSecret: string, interactionId: string): string {
    return createHmac('sha256', this.#csrfKey).update(`${browserSecret}:${interactionId}`).digest('base64url');
  }

  checkCsrf(browserSecret: string | undefined, interactionId: string, token: string | undefined): void {
    const expected = browserSecret ? Buffer.from(this.csrfToken(browserSecret, interactionId)) : null;
    const given = Buffer.from(token ?? '');
    if (!expected || expected.length !== given.length || !timingSafeEqual(expected, given)) {
      throw new AppError('ForbiddenError', 'The form has expired. Please go back and try again.');
    }
  }

  // ---- consents --------------------------------------------------------------------------------

  consents(viewer: Viewer) {
    return this.#repo().consentsOf(viewer.profileId);
  }

  /** Withdrawing a consent ends what it allowed: the person's tokens and unused codes at that client. */
  async withdrawConsent(viewer: Viewer, clientId: string): Promise<void> {
    const now = this.#now();
    await this.#db.transaction(async (trx) => {
      const repo = new OidcRepository(trx);
      if (!(await repo.deleteConsent(viewer.profileId, clientId))) {
        throw new AppError('NotFoundError', `Consent Not Found: ${clientId}`);
      }
      await repo.revokeGrants(viewer.profileId, clientId, now);
    });
  }

  // ---- token -------------------------------------------------------------------------------------

  /**
   * `POST /oidc/token`. Checks in order: grant type, client, the code (known, this client's, not
   * expired), PKCE (constant time), the exact redirect URI, then consumes the code with one
   * conditional UPDATE. A code presented twice gets `invalid_grant`, and every token issued from
   * it is revoked.
   */
  async token(form: Record<string, unknown>): Promise<TokenAnswer> {
    const field = (name: string) => (typeof form[name] === 'string' ? (form[name] as string) : undefined);
    checkOnce(form, ['grant_type', 'code', 'redirect_uri', 'client_id', 'code_verifier']);
    const repo = this.#repo();
    const clientId = field('client_id');
    const client = clientId ? await repo.findClient(clientId) : null;
    if (!client) throw new OAuthError('invalid_client', 'Invalid client_id', 401);
    if (client.status !== 'approved') throw new OAuthError('invalid_client', 'Client is not approved', 401);
    if (!field('grant_type')) throw new OAuthError('invalid_request', 'grant_type is required');
    if (field('grant_type') !== 'authorization_code') {
      throw new OAuthError('unsupported_grant_type', 'Only the authorization_code grant is supported');
    }
    const invalidCode = new OAuthError('invalid_grant', 'Invalid or expired authorization code');
    const code = field('code');
    const record = code ? await repo.findCode(hashSecret(code)) : null;
    const now = this.#now();
    if (!record || record.clientId !== client.id || record.expiresAt <= now) throw invalidCode;
    checkVerifier(field('code_verifier'), record.codeChallenge);
    if (field('redirect_uri') !== record.redirectUri) throw invalidCode;
    const accounts = new AccountsRepository(this.#db);
    const profile = await accounts.findProfile(record.profileId);
    if (!profile || profile.ddate !== null || !ACTIVE_STATES.has(profile.state)) throw invalidCode;
    // Since the code was issued, the person may have reset their password or signed out
    // everywhere (the version moved on), or withdrawn their consent.
    if (record.tokenVersion !== profile.tokenVersion) throw invalidCode;
    const consented = await repo.findConsent(profile.id, client.id);
    if (!consented || !record.scopes.every((scope) => consented.includes(scope))) throw invalidCode;

    // Consuming the code and storing its token is one transaction: a second redemption either
    // fails to consume, or comes after the token exists and revokes it.
    const accessToken = randomSecret();
    const consumed = await this.#db.transaction(async (trx) => {
      const inTrx = new OidcRepository(trx);
      if (!(await inTrx.consumeCode(record.codeHash, now))) return false;
      await inTrx.insertToken(
        {
          tokenHash: hashSecret(accessToken),
          codeHash: record.codeHash,
          clientId: client.id,
          profileId: profile.id,
          scopes: record.scopes,
          tokenVersion: profile.tokenVersion,
          expiresAt: now + OIDC_TOKEN_SECONDS * 1000,
        },
        now,
      );
      return true;
    });
    if (!consumed) {
      await repo.revokeTokensOfCode(record.codeHash, now);
      throw invalidCode;
    }
    const claims = await this.#claims(profile, record.scopes);
    const { kid, key } = await this.keys.signer();
    const idToken = await new SignJWT({
      ...claims,
      auth_time: Math.floor(record.authTime / 1000),
      ...(record.nonce !== null ? { nonce: record.nonce } : {}),
      at_hash: sha256(accessToken).subarray(0, 16).toString('base64url'),
    })
      .setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' })
      .setIssuer(this.issuer)
      .setAudience(client.id)
      .setIssuedAt(Math.floor(now / 1000))
      .setExpirationTime(Math.floor(now / 1000) + OIDC_TOKEN_SECONDS)
      .sign(key);
    return { access_token: accessToken, id_token: idToken, token_type: 'Bearer', expires_in: OIDC_TOKEN_SECONDS };
  }

  /** The claims the scopes release: `sub` always, `name` for profile, `email` and `email_verified` for email. */
  async #claims(profile: ProfileRecord, scopes: readonly OidcScope[]): Promise<Record<string, unknown>> {
    const accounts = new AccountsRepository(this.#db);
    const claims: Record<string, unknown> = { sub: profile.id };
    if (scopes.includes('profile')) {
      const name = profile.content.names?.find((n) => n.preferred) ?? profile.content.names?.[0];
      claims.name = name?.fullname || [name?.first, name?.middle, name?.last].filter(Boolean).join(' ') || profile.id;
    }
    if (scopes.includes('email')) {
      const emails = await accounts.emailsOf(profile.id);
      const email = preferredEmail(profile, emails);
      if (email) {
        claims.email = email;
        claims.email_verified = emails.find((e) => e.email === email)?.confirmed ?? false;
      }
    }
    return claims;
  }

  /** Deletes what has expired: interactions, codes and access tokens older than their lifetime. */
  async sweep(): Promise<void> {
    const now = this.#now();
    await this.#db('oidc_interactions').where('expires_at', '<', now).delete();
    await this.#db('oidc_codes').where('expires_at', '<', now - OIDC_TOKEN_SECONDS * 1000).delete();
    await this.#db('oidc_tokens').where('expires_at', '<', now).delete();
  }

  // ---- userinfo and revocation --------------------------------------------------------------------

  /**
   * `/oidc/userinfo`: the claims of a live access token; an expired, revoked or orphaned one is
   * 401. Live means also: its person still consents to the client for its scopes, and their
   * `tokenVersion` is the one it was issued under (a password reset, a logout of every device, a
   * block, a deletion or a merge moves it on, and so ends every application's tokens).
   */
  async userinfo(accessToken: string): Promise<Record<string, unknown>> {
    const found = await this.#repo().findTokenWithClientStatus(hashSecret(accessToken));
    const invalid = new OAuthError('invalid_token', 'The access token is invalid, expired or revoked', 401);
    const record = found?.token;
    if (!record || record.revokedAt !== null || record.expiresAt <= this.#now()) throw invalid;
    if (found.clientStatus !== 'approved') throw invalid;
    const consented = found.consentedScopes;
    if (!consented || !record.scopes.every((scope) => consented.includes(scope))) throw invalid;
    const profile = await new AccountsRepository(this.#db).findProfile(record.profileId);
    if (!profile || profile.ddate !== null || !ACTIVE_STATES.has(profile.state)) throw invalid;
    if (record.tokenVersion !== profile.tokenVersion) throw invalid;
    return this.#claims(profile, record.scopes);
  }

  /**
   * `/oidc/revoke` (RFC 7009): always succeeds. A `client_id` that is not the token's own
   * revokes nothing.
   */
  async revoke(form: Record<string, unknown>): Promise<void> {
    const token = typeof form.token === 'string' ? form.token : '';
    if (!token) return;
    const repo = this.#repo();
    const record = await repo.findToken(hashSecret(token));
    if (!record) return;
    if (typeof form.client_id === 'string' && form.client_id !== record.clientId) return;
    await repo.revokeToken(record.tokenHash, this.#now());
  }
}

/** An impersonation session never signs anyone in to another application. */
function usable(viewer: Viewer | null): Viewer | null {
  return viewer && !viewer.impersonator ? viewer : null;
}

// ---- the named checks of /oidc/authorize, in the order they run ------------------------------------

/** The authorization request's parameters (others are ignored, as RFC 6749 §3.1 asks). */
const AUTHORIZATION_PARAMETERS = ['response_type', 'scope', 'state', 'nonce', 'code_challenge', 'code_challenge_method', 'prompt', 'max_age'];

/** checkOnce: none of `names` was sent more than once (a parser gives an array, or an object for `a[b]=`). */
function checkOnce(values: Record<string, unknown>, names: readonly string[]): void {
  for (const name of names) {
    const value = values[name];
    if (value !== undefined && typeof value !== 'string') throw new OAuthError('invalid_request', `${name} must be sent once, as a plain value`);
  }
}

/** checkApproved: the client's registration was approved by an operator. */
function checkApproved(client: OidcClient): void {
  if (client.status !== 'approved') throw new OAuthError('unauthorized_client', 'Client is not approved');
}

/** checkRedirectUri: `redirect_uri` equals one of the client's registered URIs exactly. */
function checkRedirectUri(client: OidcClient, redirectUri: string | undefined): void {
  if (!redirectUri || !client.redirectUris.includes(redirectUri)) throw new OAuthError('invalid_request', 'Invalid redirect_uri');
}

/** checkResponseType: only `code`. */
function checkResponseType(responseType: string | undefined): void {
  if (responseType !== 'code') throw new OAuthError('unsupported_response_type', 'response_type must be code');
}

/** checkPrompt: known values; `none` only alone. */
function checkPrompt(prompt: string | undefined): string[] {
  const values = (prompt ?? '').split(' ').filter(Boolean);
  if (values.includes('none') && values.length > 1) throw new OAuthError('invalid_request', 'prompt=none cannot be combined with other values');
  return values;
}

/** checkScope: `openid` is required; every scope must have been granted to the client. */
function checkScope(client: OidcClient, scope: string | undefined): OidcScope[] {
  const scopes = [...new Set((scope ?? '').split(' ').filter(Boolean))];
  if (!scopes.includes('openid')) throw new OAuthError('invalid_scope', 'Scope must include openid');
  for (const s of scopes) {
    const known = OidcScope.safeParse(s);
    if (!known.success || !client.scopes.includes(known.data)) throw new OAuthError('invalid_scope', `Unsupported scope: ${s}`);
  }
  return scopes as OidcScope[];
}

/**
 * checkPkce: a `code_challenge` with method `S256` (`plain` is refused). An S256 challenge is
 * BASE64URL(SHA-256(verifier)) without padding: exactly 43 characters of the base64url alphabet.
 */
function checkPkce(challenge: string | undefined, method: string | undefined): string {
  if (!challenge) throw new OAuthError('invalid_request', 'code_challenge is required for public clients');
  if (method !== 'S256') throw new OAuthError('invalid_request', 'code_challenge_method must be S256');
  if (!/^[A-Za-z0-9_-]{43}$/.test(challenge)) {
    throw new OAuthError('invalid_request', 'code_challenge must be the 43-character base64url SHA-256 of the code verifier');
  }
  return challenge;
}

/** checkMaxAge: a whole number of seconds, when given. */
function checkMaxAge(maxAge: string | undefined): number | undefined {
  if (maxAge === undefined || maxAge === '') return undefined;
  if (!/^\d{1,10}$/.test(maxAge)) throw new OAuthError('invalid_request', 'max_age must be a whole number of seconds');
  return Number(maxAge);
}

/** checkLengths: `state` and `nonce` are kept until the code is redeemed, so they are bounded. */
function checkLengths(values: Record<string, string | undefined>): void {
  for (const [name, value] of Object.entries(values)) {
    if (value !== undefined && value.length > 500) throw new OAuthError('invalid_request', `${name} must be at most 500 characters`);
  }
}

/** A code verifier as RFC 7636 §4.1 defines it: 43 to 128 unreserved characters. */
const CODE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

/**
 * checkVerifier: a `code_verifier` is required and well formed (RFC 7636 §4.1; otherwise
 * `invalid_request`), and BASE64URL(SHA-256(code_verifier)) equals the challenge, compared in
 * constant time (otherwise `invalid_grant`, §4.6).
 */
function checkVerifier(verifier: string | undefined, challenge: string): void {
  if (!verifier) throw new OAuthError('invalid_request', 'code_verifier is required');
  if (!CODE_VERIFIER.test(verifier)) {
    throw new OAuthError('invalid_request', 'code_verifier must be 43 to 128 characters of A-Z, a-z, 0-9, -, ., _ and ~');
  }
  const computed = Buffer.from(sha256(verifier).toString('base64url'));
  const expected = Buffer.from(challenge);
  if (computed.length !== expected.length || !timingSafeEqual(computed, expected)) {
    throw new OAuthError('invalid_grant', 'Invalid code_verifier');
  }
}
