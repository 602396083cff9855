import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import { OIDC_TOKEN_SECONDS } from '../../shared/index.ts';
import { LOGOUT_TOKEN_SECONDS } from './back-channel.ts';
import type { KeyRecord, OidcRepository } from './repository.ts';
import { keptText, type KeptText } from '../etag.ts';

interface PublishedKeys {
  keys: KeyRecord[];
  jwks: KeptText;
  until: number;
}

/** How long the signer trusts its last reading of the key list. */
const SIGNER_READ_MS = 1000;

/**
 * How long a retired key stays published: until the last token it signed has expired. That is
 * the hour of an ID token, and the two days of a logout token (`back-channel.ts`), which is
 * signed once, when queued, and sent on each retry for about a day: a relying party validates it
 * as an ID token (Back-Channel Logout §2.6), so it must find the key however late the delivery
 * that succeeds. Signing each attempt afresh instead would store the token's claims rather than
 * the token, a change of what the queue holds (and of the rows queued before it); a retired key
 * signs nothing, and its public half published a day or two longer serves only tokens it signed
 * while in service. A key whose private half leaked needs more than a rotation either way.
 */
const PUBLISHED_AFTER_RETIREMENT_MS = Math.max(OIDC_TOKEN_SECONDS, LOGOUT_TOKEN_SECONDS) * 1000;

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
  /** The published keys as last read, their JWKS, and until when that reading is used. */
  #read: PublishedKeys | null = null;
  /** The reading under way, which every request arriving meanwhile waits for. */
  #reading: Promise<PublishedKeys> | null = null;
  /** Moved on by a rotation here, so a reading begun before it is not kept. */
  #generation = 0;

  constructor(repo: OidcRepository, activationSeconds: number, now: () => number = Date.now) {
    this.#repo = repo;
    this.#activationSeconds = activationSeconds;
    this.#now = now;
  }

  async #published() {
    return this.#repo.publishedKeys(this.#now() - PUBLISHED_AFTER_RETIREMENT_MS);
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
    // Seen at once here: a reading that started before the rotation is not kept.
    this.#generation += 1;
    this.#read = null;
    this.#reading = null;
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
   * The published keys, read again a second after the last reading, and at the moment a key it
   * holds takes over, rather than on every request: a rotation by another process (the admin
   * command) is seen within that second, and the key it replaces stays published after
   * (`PUBLISHED_AFTER_RETIREMENT_MS`), so a token it signs meanwhile verifies. Requests arriving while the list is being read
   * wait for that one reading instead of each reading it again.
   */
  async #current(): Promise<PublishedKeys> {
    const now = this.#now();
    if (this.#read && now < this.#read.until) return this.#read;
    if (this.#reading) return this.#reading;
    const generation = this.#generation;
    const reading = this.#published()
      .then((keys) => {
        const at = this.#now();
        const last = this.#read;
        // The JSON body and its ETag are made once per change of the key set, not per request.
        const same = last !== null && last.keys.map((k) => k.kid).join() === keys.map((k) => k.kid).join();
        const read = { keys, jwks: same ? last.jwks : jwksBody(keys), until: Math.min(at + SIGNER_READ_MS, ...keys.map((k) => k.activatesAt).filter((t) => t > at)) };
        if (generation === this.#generation) this.#read = read;
        return read;
      })
      .finally(() => {
        if (this.#reading === reading) this.#reading = null;
      });
    this.#reading = reading;
    return reading;
  }

  /** The current signing key, imported once per rotation. */
  async signer(): Promise<{ kid: string; key: CryptoKey }> {
    const read = await this.#current();
    const now = this.#now();
    const current = read.keys.find((k) => k.activatesAt <= now);
    if (!current) throw new Error('no signing key: run the migrations and start the server once');
    if (this.#signer?.kid !== current.kid) {
      this.#signer = { kid: current.kid, key: (await importJWK(current.privateJwk as JWK, 'RS256')) as CryptoKey };
    }
    return this.#signer;
  }

  /** The public keys a relying party verifies ID tokens with. */
  async jwks(): Promise<{ keys: Array<Record<string, unknown>> }> {
    return { keys: (await this.#current()).keys.map((k) => k.publicJwk) };
  }

  /** The JWKS as sent, if the key list was read within the last second (no reading is started); else null. */
  jwksBodyNow(): KeptText | null {
    return this.#read && this.#now() < this.#read.until ? this.#read.jwks : null;
  }

  /** The JWKS as sent: its JSON text and an ETag of it, made once per change of the key set. */
  async jwksBody(): Promise<KeptText> {
    return (await this.#current()).jwks;
  }
}

/** The JWKS document of `keys`, serialised once. */
function jwksBody(keys: KeyRecord[]): KeptText {
  return keptText(JSON.stringify({ keys: keys.map((k) => k.publicJwk) }), 'jwks');
}
