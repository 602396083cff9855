import type { Knex } from 'knex';
import { fromJson as json, numberOrNull } from '../../db/json.ts';
import { exclusively, rawRows, watchWrites, type WriteWatch } from '../../db/knex.ts';
import type { OidcClient, OidcScope } from '../../shared/index.ts';
import { LogoutRepository } from './logout-repository.ts';
import { DeviceRepository } from './device-repository.ts';
import { PushedRepository } from './pushed-repository.ts';
import { RefreshRepository } from './refresh-repository.ts';
import { RegistryRepository } from './registry-repository.ts';
import type { CodeRecord } from './codes.ts';

/** The authorization request as it arrived, kept while the person signs in and consents. */
export interface AuthorizationParams {
  clientId: string;
  redirectUri: string;
  scopes: OidcScope[];
  state?: string | undefined;
  nonce?: string | undefined;
  /** Null: a confidential client that sent no PKCE challenge. */
  codeChallenge: string | null;
  prompt: string[];
  maxAge?: number | undefined;
  /** `acr_values`, in the client's order of preference: `2` asks for a second factor (`flow.ts` `secondFactorAsked`). */
  acrValues?: string[] | undefined;
  /** The subject an `id_token_hint` names: someone else signed in must sign in again. */
  hintSubject?: string | undefined;
  /** `login_hint` (OpenID Connect Core §3.1.2.1): what the login page's first field starts with. */
  loginHint?: string | undefined;
  /** `response_mode`: how the answer goes back (absent: the query). */
  responseMode?: 'fragment' | 'form_post' | undefined;
}

export interface Interaction {
  id: string;
  params: AuthorizationParams;
  profileId: string | null;
  authenticatedAt: number | null;
  expiresAt: number;
  completedAt: number | null;
}

/** A person's consent to a client: the scopes it covers, and when it was first given (widening keeps it). */
export interface ConsentRecord {
  scopes: OidcScope[];
  grantedAt: number;
}

export interface TokenRecord {
  tokenHash: string;
  codeHash: string;
  clientId: string;
  profileId: string;
  scopes: OidcScope[];
  /** The profile's `tokenVersion` when the token was issued (null: issued before it was kept). */
  tokenVersion: number | null;
  /** When it was issued. */
  createdAt: number;
  expiresAt: number;
  revokedAt: number | null;
  /** The refresh-token family it was issued with (null: none was). */
  familyId: string | null;
}

/** An access token to issue for a redeemed code (`issueTokensOfCodes`). */
export interface TokenOfCode {
  code: CodeRecord;
  tokenHash: string;
  now: number;
  expiresAt: number;
  /** The refresh-token family started with it (null: none). */
  familyId: string | null;
}

export interface KeyRecord {
  kid: string;
  privateJwk: Record<string, unknown>;
  publicJwk: Record<string, unknown>;
  createdAt: number;
  activatesAt: number;
  retiredAt: number | null;
}

/** The install-wide lock under which signing keys are added. */
const OIDC_KEYS_LOCK = 'oidc-keys';

const keyRow = (key: KeyRecord) => ({
  kid: key.kid,
  private_jwk: JSON.stringify(key.privateJwk),
  public_jwk: JSON.stringify(key.publicJwk),
  created_at: key.createdAt,
  activates_at: key.activatesAt,
  retired_at: key.retiredAt,
});

/**
 * A client as the provider uses it: the registry's view (`OidcClient`) and what only the server
 * reads (its public keys or where they are, its sector, its refresh-token lifetimes, the hash of
 * its registration access token, the metadata it registered with). Its secrets are apart
 * (`RegistryRepository`), read only when it authenticates.
 */
export interface ClientRecord extends OidcClient {
  jwks: { keys: Array<Record<string, unknown>> } | null;
  jwksUri: string | null;
  sectorIdentifierUri: string | null;
  /** How long a refresh-token family lives at most, and unused (null: the provider's defaults). */
  refreshAbsoluteSeconds: number | null;
  refreshIdleSeconds: number | null;
  registrationTokenHash: string | null;
  /**
   * Approved by the initial access token it registered with (`--approved`), no operator having
   * decided on it since: RFC 7592 updates keep it approved. An operator's approval covers what
   * they were shown, and an update that changes it asks them again (`registration.ts`).
   */
  approvedByToken: boolean;
  /** The RFC 7591 metadata as registered (null: registered by an operator). */
  metadata: Record<string, unknown> | null;
  /** A resource server's: the clients whose access tokens it may introspect (null: an ordinary client). */
  introspectsFor: string[] | null;
}

const toClient = (row: Record<string, unknown>): ClientRecord => ({
  id: String(row.id),
  name: String(row.name),
  redirectUris: json<string[]>(row.redirect_uris),
  scopes: json<OidcScope[]>(row.scopes),
  status: row.status as OidcClient['status'],
  authMethod: row.auth_method as OidcClient['authMethod'],
  grantTypes: json<OidcClient['grantTypes']>(row.grant_types),
  postLogoutRedirectUris: json<string[]>(row.post_logout_redirect_uris),
  backchannelLogoutUri: (row.backchannel_logout_uri ?? null) as string | null,
  backchannelLogoutSessionRequired: Boolean(row.backchannel_logout_session_required),
  subjectType: row.subject_type as OidcClient['subjectType'],
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
  jwks: row.jwks === null || row.jwks === undefined ? null : json<ClientRecord['jwks']>(row.jwks),
  jwksUri: (row.jwks_uri ?? null) as string | null,
  sectorIdentifierUri: (row.sector_identifier_uri ?? null) as string | null,
  refreshAbsoluteSeconds: numberOrNull(row.refresh_absolute_seconds),
  refreshIdleSeconds: numberOrNull(row.refresh_idle_seconds),
  registrationTokenHash: (row.registration_token_hash ?? null) as string | null,
  approvedByToken: Boolean(row.approved_by_token),
  metadata: row.metadata === null || row.metadata === undefined ? null : json<Record<string, unknown>>(row.metadata),
  introspectsFor: row.introspects_for === null || row.introspects_for === undefined ? null : json<string[]>(row.introspects_for),
});

/** The registry's view of a client: nothing of its keys or tokens. */
export function listedClient(record: ClientRecord): OidcClient {
  const { jwks: _jwks, jwksUri: _jwksUri, sectorIdentifierUri: _sector, refreshAbsoluteSeconds: _absolute, refreshIdleSeconds: _idle, registrationTokenHash: _token, approvedByToken: _approvedByToken, metadata: _metadata, introspectsFor: _introspectsFor, ...client } = record;
  return client;
}

const clientRow = (client: ClientRecord) => ({
  id: client.id,
  name: client.name,
  redirect_uris: JSON.stringify(client.redirectUris),
  scopes: JSON.stringify(client.scopes),
  status: client.status,
  auth_method: client.authMethod,
  grant_types: JSON.stringify(client.grantTypes),
  jwks: client.jwks === null ? null : JSON.stringify(client.jwks),
  jwks_uri: client.jwksUri,
  post_logout_redirect_uris: JSON.stringify(client.postLogoutRedirectUris),
  backchannel_logout_uri: client.backchannelLogoutUri,
  backchannel_logout_session_required: client.backchannelLogoutSessionRequired,
  subject_type: client.subjectType,
  sector_identifier_uri: client.sectorIdentifierUri,
  refresh_absolute_seconds: client.refreshAbsoluteSeconds,
  refresh_idle_seconds: client.refreshIdleSeconds,
  registration_token_hash: client.registrationTokenHash,
  approved_by_token: client.approvedByToken,
  metadata: client.metadata === null ? null : JSON.stringify(client.metadata),
  introspects_for: client.introspectsFor === null ? null : JSON.stringify(client.introspectsFor),
  created_at: client.createdAt,
  updated_at: client.updatedAt,
});

/** SQL for the sign-in provider. */
function toToken(row: Record<string, unknown>): TokenRecord {
  return {
    tokenHash: row.token_hash as string,
    codeHash: row.code_hash as string,
    clientId: row.client_id as string,
    profileId: row.profile_id as string,
    scopes: json<OidcScope[]>(row.scopes),
    tokenVersion: numberOrNull(row.token_version),
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
    familyId: (row.family_id ?? null) as string | null,
  };
}

export class OidcRepository {
  readonly #db: Knex;

  constructor(db: Knex) {
    this.#db = db;
  }

  /** Client secrets, initial access tokens and assertions (`registry-repository.ts`). */
  get registry(): RegistryRepository {
    return new RegistryRepository(this.#db);
  }

  /** Back-channel logout: sessions' clients and the delivery queue (`logout-repository.ts`). */
  get logouts(): LogoutRepository {
    return new LogoutRepository(this.#db);
  }

  /** Devices' requests (RFC 8628, `device-repository.ts`). */
  get devices(): DeviceRepository {
    return new DeviceRepository(this.#db);
  }

  /** Pushed authorization requests (RFC 9126, `pushed-repository.ts`). */
  get pushed(): PushedRepository {
    return new PushedRepository(this.#db);
  }

  /** Refresh tokens (`refresh-repository.ts`). */
  get refreshTokens(): RefreshRepository {
    return new RefreshRepository(this.#db);
  }

  /** This process's writes to `tables` (`watchWrites`), for a cache of what is read from them. */
  watchWrites(tables: readonly string[], opts: { insertsIgnored?: readonly string[] } = {}): WriteWatch {
    return watchWrites(this.#db, tables, opts);
  }

  /** Runs `work` in one transaction, with a repository that writes inside it. */
  transaction<T>(work: (repo: OidcRepository) => Promise<T>): Promise<T> {
    return this.#db.transaction((trx) => work(new OidcRepository(trx)));
  }

  /** Deletes what has expired: interactions, devices' and pushed requests and access tokens (a code's single use is its token's row: `codes.ts`). */
  async sweep(now: number): Promise<void> {
    await this.#db('oidc_interactions').where('expires_at', '<', now).delete();
    await this.#db('oidc_tokens').where('expires_at', '<', now).delete();
    await this.registry.sweep(now);
    await this.refreshTokens.sweep(now);
    await this.logouts.sweep(now);
    await this.devices.sweep(now);
    await this.pushed.sweep(now);
  }

  // ---- clients -----------------------------------------------------------------------------------

  async insertClient(client: ClientRecord): Promise<void> {
    await this.#db('oidc_clients').insert(clientRow(client));
  }

  /**
   * Replaces a client's record (RFC 7592 update) while its registration access token is still
   * `tokenHash` (two updates with one token: the second finds it rotated), its status and how it
   * was approved left as they are (an operator may decide meanwhile): false when it is gone or the
   * token was rotated. `unapprove`: the update changes what an operator reviewed, and a client an
   * operator approved goes back to pending, decided in the statement, so an approval given since
   * the client was read counts.
   */
  async replaceClient(client: ClientRecord, opts: { tokenHash: string; unapprove: boolean }): Promise<boolean> {
    const { id: _id, created_at: _created, status: _status, approved_by_token: _approvedByToken, ...row } = clientRow(client);
    const unapproved = opts.unapprove ? { status: this.#db.raw("CASE WHEN status = 'approved' AND NOT approved_by_token THEN 'pending' ELSE status END") } : {};
    return (await this.#db('oidc_clients').where({ id: client.id, registration_token_hash: opts.tokenHash }).update({ ...row, ...unapproved })) === 1;
  }

  async findClient(id: string): Promise<ClientRecord | null> {
    const row = await this.#db('oidc_clients').where({ id }).first();
    return row ? toClient(row) : null;
  }

  async listClients(): Promise<OidcClient[]> {
    return (await this.#db('oidc_clients').orderBy('id')).map((row: Record<string, unknown>) => listedClient(toClient(row)));
  }

  /** An operator's or super user's decision: from then on, the client's approval is theirs. */
  async setClientStatus(id: string, status: OidcClient['status'], now: number): Promise<boolean> {
    return (await this.#db('oidc_clients').where({ id }).update({ status, approved_by_token: false, updated_at: now })) === 1;
  }

  /** Deletes a client; `tokenHash`: only while it is its registration access token's (RFC 7592 §2.3), in the one statement. */
  async deleteClient(id: string, opts: { tokenHash?: string } = {}): Promise<boolean> {
    return (await this.#db('oidc_clients').where({ id, ...(opts.tokenHash !== undefined ? { registration_token_hash: opts.tokenHash } : {}) }).delete()) === 1;
  }

  // ---- keys --------------------------------------------------------------------------------------

  /**
   * Adds `key` when no key is in service (none unretired): of processes starting together on a
   * new database, one adds the first key and the others add nothing. Under the install-wide
   * `oidc-keys` lock, which `rotateIn` takes too, so the check and the insert see every other
   * process's keys. False when a key was there already.
   */
  async insertFirstKey(key: KeyRecord): Promise<boolean> {
    return exclusively(this.#db, OIDC_KEYS_LOCK, async (trx) => {
      if (await trx('oidc_keys').whereNull('retired_at').first('kid')) return false;
      await trx('oidc_keys').insert(keyRow(key));
      return true;
    });
  }

  /**
   * Marks the keys in service as retiring at `key.activatesAt`, when `key` (added here) starts
   * signing. One step under the `oidc-keys` lock, so a server starting meanwhile never adds a
   * second key in service.
   */
  async rotateIn(key: KeyRecord): Promise<void> {
    await exclusively(this.#db, OIDC_KEYS_LOCK, async (trx) => {
      await trx('oidc_keys').whereNull('retired_at').update({ retired_at: key.activatesAt });
      await trx('oidc_keys').insert(keyRow(key));
    });
  }

  /** Keys still published: the signing key, and retired ones retired after `since`. */
  async publishedKeys(since: number): Promise<KeyRecord[]> {
    const rows = await this.#db('oidc_keys').whereNull('retired_at').orWhere('retired_at', '>', since).orderBy('activates_at', 'desc');
    return rows.map((row: Record<string, unknown>) => ({
      kid: String(row.kid),
      privateJwk: json<Record<string, unknown>>(row.private_jwk),
      publicJwk: json<Record<string, unknown>>(row.public_jwk),
      createdAt: Number(row.created_at),
      activatesAt: Number(row.activates_at),
      retiredAt: row.retired_at === null ? null : Number(row.retired_at),
    }));
  }

  // ---- interactions and consents -----------------------------------------------------------------

  async insertInteraction(id: string, params: AuthorizationParams, now: number, expiresAt: number): Promise<void> {
    await this.#db('oidc_interactions').insert({
      id,
      client_id: params.clientId,
      params: JSON.stringify(params),
      created_at: now,
      expires_at: expiresAt,
    });
  }

  async findInteraction(id: string, now: number): Promise<Interaction | null> {
    const row = await this.#db('oidc_interactions').where({ id }).whereNull('completed_at').where('expires_at', '>', now).first();
    if (!row) return null;
    return {
      id: row.id,
      params: json<AuthorizationParams>(row.params),
      profileId: row.profile_id,
      authenticatedAt: row.authenticated_at === null ? null : Number(row.authenticated_at),
      expiresAt: Number(row.expires_at),
      completedAt: null,
    };
  }

  async markAuthenticated(id: string, profileId: string, at: number): Promise<void> {
    await this.#db('oidc_interactions').where({ id }).update({ profile_id: profileId, authenticated_at: at });
  }

  /** Ends an interaction; false when it had already ended (a double submit). */
  async completeInteraction(id: string, now: number): Promise<boolean> {
    return (await this.#db('oidc_interactions').where({ id }).whereNull('completed_at').update({ completed_at: now })) === 1;
  }

  async findConsent(profileId: string, clientId: string): Promise<ConsentRecord | null> {
    const row = await this.#db('oidc_consents').where({ profile_id: profileId, client_id: clientId }).first('scopes', 'created_at');
    return row ? { scopes: json<OidcScope[]>(row.scopes), grantedAt: Number(row.created_at) } : null;
  }

  /**
   * Gives a consent, or widens the one given: it covers `scopes` and every scope it covered
   * before. A consent is never narrowed (withdrawing deletes it), so the time it was first given
   * names it to the codes issued under it (`issueTokenOfCode`): a new consent is given `now`, a
   * widened one keeps its time. The read and the write are one transaction (the caller's, or
   * one of its own), so two consents given at once (two tabs) both stay. Answers that time, and
   * the scopes it covers now when they grew (null when it covered them all already).
   */
  async widenConsent(profileId: string, clientId: string, scopes: readonly OidcScope[], now: number): Promise<{ grantedAt: number; widened: OidcScope[] | null }> {
    if (!this.#db.isTransaction) return this.transaction((repo) => repo.widenConsent(profileId, clientId, scopes, now));
    const before = (await this.findConsent(profileId, clientId))?.scopes ?? [];
    const merged = [...new Set([...before, ...scopes])];
    const rows: Array<{ created_at: unknown }> = await this.#db('oidc_consents')
      .insert({ profile_id: profileId, client_id: clientId, scopes: JSON.stringify(merged), created_at: now })
      .onConflict(['profile_id', 'client_id'])
      .merge({ scopes: JSON.stringify(merged) })
      .returning('created_at');
    const grantedAt = Number(rows[0]?.created_at);
    if (!Number.isFinite(grantedAt)) throw new Error('widenConsent: the consent\'s time did not come back');
    return { grantedAt, widened: merged.length > before.length ? merged : null };
  }

  /** A person's consents, with each client's way of authenticating and when its tokens were last issued. */
  async consentsOf(profileId: string): Promise<Array<{ clientId: string; clientName: string; authMethod: OidcClient['authMethod']; scopes: string[]; createdAt: number; lastUsedAt: number | null }>> {
    const rows = await this.#db('oidc_consents')
      .join('oidc_clients', 'oidc_clients.id', 'oidc_consents.client_id')
      .leftJoin('oidc_client_uses', (join) => {
        join.on('oidc_client_uses.profile_id', '=', 'oidc_consents.profile_id').andOn('oidc_client_uses.client_id', '=', 'oidc_consents.client_id');
      })
      .where('oidc_consents.profile_id', profileId)
      .select('oidc_consents.client_id', 'oidc_clients.name', 'oidc_clients.auth_method', 'oidc_consents.scopes', 'oidc_consents.created_at', 'oidc_client_uses.last_used_at')
      .orderBy('oidc_consents.client_id');
    return rows.map((row: Record<string, unknown>) => ({
      clientId: String(row.client_id),
      clientName: String(row.name),
      authMethod: row.auth_method as OidcClient['authMethod'],
      scopes: json<string[]>(row.scopes),
      createdAt: Number(row.created_at),
      lastUsedAt: numberOrNull(row.last_used_at),
    }));
  }

  /** Notes that a client was issued a person's tokens now (a code redeemed, a refresh). */
  async noteUse(profileId: string, clientId: string, now: number): Promise<void> {
    await this.#db('oidc_client_uses')
      .insert({ profile_id: profileId, client_id: clientId, last_used_at: now })
      .onConflict(['profile_id', 'client_id'])
      .merge({ last_used_at: now });
  }

  async deleteConsent(profileId: string, clientId: string): Promise<boolean> {
    return (await this.#db('oidc_consents').where({ profile_id: profileId, client_id: clientId }).delete()) === 1;
  }

  // ---- codes and tokens --------------------------------------------------------------------------

  /**
   * Issues the access token of a sealed code (`codes.ts`), in one statement: stored only if the
   * person's consent to the client is still the one the code was issued under (the row given at
   * the code's `consentedAt`: withdrawing deletes it, and a consent given again is a new row; a
   * consent only widens, so it still covers the code's scopes), and only once per code (a unique
   * index on `code_hash`). False when nothing was issued: the code was redeemed before, or its
   * consent is gone.
   */
  async issueTokenOfCode(issue: TokenOfCode): Promise<boolean> {
    return (await this.issueTokensOfCodes([issue])).has(issue.tokenHash);
  }

  /**
   * `issueTokenOfCode` for several codes in one statement (the token endpoint's `TurnBatch`):
   * the hashes of the tokens issued. Each row is issued or not on its own conditions; of two rows
   * of the same code, one is.
   */
  async issueTokensOfCodes(issues: readonly TokenOfCode[]): Promise<Set<string>> {
    if (issues.length === 0) return new Set();
    const row = '(cast(? as text), cast(? as text), cast(? as text), cast(? as integer), cast(? as bigint), cast(? as bigint), cast(? as text), cast(? as text), cast(? as text), cast(? as text), cast(? as bigint))';
    // A plain insert of `oidc_tokens` that reads `oidc_consents` (`watchWrites` keeps the kept
    // consents); the columns of a VALUES list are column1, column2, … in SQLite and PostgreSQL alike.
    const result: unknown = await this.#db.raw(
      `insert into oidc_tokens (token_hash, code_hash, client_id, profile_id, scopes, token_version, created_at, expires_at, family_id, sid)
       select v.column1, v.column2, c.client_id, c.profile_id, v.column3, v.column4, v.column5, v.column6, v.column7, v.column8
       from (values ${issues.map(() => row).join(', ')}) as v, oidc_consents c
       where c.profile_id = v.column9 and c.client_id = v.column10 and c.created_at = v.column11
       on conflict (code_hash) do nothing
       returning token_hash`,
      issues.flatMap(({ code, tokenHash, now, expiresAt, familyId }) => [
        tokenHash,
        code.codeHash,
        JSON.stringify(code.scopes),
        code.tokenVersion,
        now,
        expiresAt,
        familyId,
        code.sid,
        code.profileId,
        code.clientId,
        code.consentedAt,
      ]),
    );
    return new Set(rawRows<{ token_hash: string }>(result).map((issued) => issued.token_hash));
  }

  async findToken(tokenHash: string): Promise<TokenRecord | null> {
    const row = await this.#db('oidc_tokens').where({ token_hash: tokenHash }).first();
    return row ? toToken(row) : null;
  }

  /**
   * A token with its client's status (null when the client is gone) and the scopes its person
   * still consents to for that client (null when withdrawn), in one query: UserInfo checks all.
   */
  async findTokenWithClientStatus(
    tokenHash: string,
  ): Promise<{ token: TokenRecord; clientStatus: OidcClient['status'] | null; consentedScopes: OidcScope[] | null } | null> {
    const row = await this.#db('oidc_tokens')
      .leftJoin('oidc_clients', 'oidc_clients.id', 'oidc_tokens.client_id')
      .leftJoin('oidc_consents', (join) => {
        join.on('oidc_consents.profile_id', '=', 'oidc_tokens.profile_id').andOn('oidc_consents.client_id', '=', 'oidc_tokens.client_id');
      })
      .where('oidc_tokens.token_hash', tokenHash)
      .first('oidc_tokens.*', 'oidc_clients.status as client_status', 'oidc_consents.scopes as consent_scopes');
    if (!row) return null;
    return {
      token: toToken(row),
      clientStatus: (row.client_status ?? null) as OidcClient['status'] | null,
      consentedScopes: row.consent_scopes === null || row.consent_scopes === undefined ? null : json<OidcScope[]>(row.consent_scopes),
    };
  }

  /**
   * A person withdrew their consent from a client: every live token of theirs at that client is
   * revoked. Their codes at it need nothing: one is redeemed only under the consent row it was
   * issued under (`issueTokenOfCode`), which withdrawing deletes.
   */
  async revokeGrants(profileId: string, clientId: string, now: number): Promise<void> {
    await this.#db('oidc_tokens').where({ profile_id: profileId, client_id: clientId }).whereNull('revoked_at').update({ revoked_at: now });
    await this.#db('oidc_refresh_tokens').where({ profile_id: profileId, client_id: clientId }).whereNull('revoked_at').update({ revoked_at: now });
  }

  async revokeToken(tokenHash: string, now: number): Promise<void> {
    await this.#db('oidc_tokens').where({ token_hash: tokenHash }).whereNull('revoked_at').update({ revoked_at: now });
  }

  /**
   * Revokes every token issued from a code (the code was presented twice, RFC 6749 §4.1.2): its
   * access token, and the refresh-token family it started with every access token issued since.
   * Two statements: run it in a transaction (`transaction`).
   */
  async revokeTokensOfCode(codeHash: string, now: number): Promise<void> {
    const families = this.#db('oidc_tokens').where({ code_hash: codeHash }).whereNotNull('family_id').select('family_id');
    await this.#db('oidc_refresh_tokens').whereIn('family_id', families).whereNull('revoked_at').update({ revoked_at: now });
    await this.#db('oidc_tokens')
      .where((tokens) => tokens.where({ code_hash: codeHash }).orWhereIn('family_id', families))
      .whereNull('revoked_at')
      .update({ revoked_at: now });
  }
}
