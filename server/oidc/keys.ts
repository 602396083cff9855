import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import { OIDC_TOKEN_SECONDS } from '../../shared/index.ts';
import type { KeyRecord, OidcRepository } from './repository.ts';

/** How long the signer trusts its last reading of the key list. */
const SIGNER_READ_MS = 1000;

/**
 * The provider's RS256 signing keys, kept in the database. The first is made on first start and
 * signs at once. `rotate` publishes a new key that starts signing `activationSeconds` later (so
 * relying parties that cached the key set have fetched it by then); the old key signs until
 * then, and its public half stays in the JWKS until every token it signed has expired. Private
 * keys never leave this class.
 */
export class KeyStore {
  readonly #repo: OidcRepository;
  readonly #now: () => number;
  readonly #activationSeconds: number;
  #signer: { kid: string; key: CryptoKey } | null = null;
  /** The published keys as last read, and until when that reading is used to pick the signer. */
  #read: { keys: KeyRecord[]; until: number } | null = null;

  constructor(repo: OidcRepository, activationSeconds: number, now: () => number = Date.now) {
    this.#repo = repo;
    this.#activationSeconds = activationSeconds;
    this.#now = now;
  }

  async #published() {
    return this.#repo.publishedKeys(this.#now() - OIDC_TOKEN_SECONDS * 1000);
  }

  /**
   * Makes the first key if there is none. Generating a key pair takes a while, so it is done
   * before taking the lock; the key is added only if, under the lock, there is still none (of
   * servers starting together on a new database, one key is kept and the others' are dropped).
   */
  async ensureKey(): Promise<void> {
    if ((await this.#published()).some((k) => k.retiredAt === null)) return;
    const now = this.#now();
    await this.#repo.insertFirstKey(await this.#make(now));
  }

  /** Publishes a new signing key, which takes over `activationSeconds` from now. */
  async rotate(): Promise<string> {
    const key = await this.#make(this.#now() + this.#activationSeconds * 1000);
    await this.#repo.rotateIn(key);
    this.#signer = null;
    this.#read = null;
    return key.kid;
  }

  /** A new RS256 key pair, signing from `activatesAt`. */
  async #make(activatesAt: number): Promise<KeyRecord> {
    const { privateKey, publicKey } = await generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
    const publicJwk = await exportJWK(publicKey);
    const kid = await calculateJwkThumbprint(publicJwk);
    const privateJwk = await exportJWK(privateKey);
    return {
      kid,
      privateJwk: { ...privateJwk, kid, alg: 'RS256' },
      publicJwk: { ...publicJwk, kid, alg: 'RS256', use: 'sig' },
      createdAt: this.#now(),
      activatesAt,
      retiredAt: null,
    };
  }

  /**
   * The current signing key, imported once per rotation. The key list is read again a second
   * after the last reading, and at the moment a key it holds takes over, rather than on every
   * sign-in: a rotation by another process (the admin command) is seen within that second, and
   * the key it replaces stays published for an hour after, so a token it signs meanwhile verifies.
   */
  async signer(): Promise<{ kid: string; key: CryptoKey }> {
    const now = this.#now();
    if (!this.#read || now >= this.#read.until) {
      const keys = await this.#published();
      this.#read = { keys, until: Math.min(now + SIGNER_READ_MS, ...keys.map((k) => k.activatesAt).filter((at) => at > now)) };
    }
    const current = this.#read.keys.find((k) => k.activatesAt <= now);
    if (!current) throw new Error('no signing key: run the migrations and start the server once');
    if (this.#signer?.kid !== current.kid) {
      this.#signer = { kid: current.kid, key: (await importJWK(current.privateJwk as JWK, 'RS256')) as CryptoKey };
    }
    return this.#signer;
  }

  /** The public keys a relying party verifies ID tokens with. */
  async jwks(): Promise<{ keys: Array<Record<string, unknown>> }> {
    return { keys: (await this.#published()).map((k) => k.publicJwk) };
  }
}
