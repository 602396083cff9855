import { randomBytes, scrypt, type ScryptOptions } from 'node:crypto';
import { AppError } from '../../shared/errors.ts';
import { safeEqual } from '../secrets.ts';

export interface ScryptParams {
  N: number;
  r: number;
  p: number;
}

/** OWASP's scrypt parameters: N = 2^17, r = 8, p = 1 (about 128 MiB and a third of a second). What `npm start` hashes with. */
export const OWASP_SCRYPT: ScryptParams = { N: 2 ** 17, r: 8, p: 1 };
/**
 * The cost the test suite hashes new passwords at (`PASSWORD_HASH_COST=test`, which the
 * configuration accepts only with `NODE_ENV=test`): 1 MiB and about a millisecond, so that the
 * suite's thousands of sign-ins do not spend minutes in scrypt. Every other step is the same.
 */
export const TEST_SCRYPT: ScryptParams = { N: 2 ** 10, r: 8, p: 1 };
const KEY_LENGTH = 64;

function derive(password: string, salt: Buffer, params: ScryptParams): Promise<Buffer> {
  const options: ScryptOptions = { ...params, maxmem: 256 * params.N * params.r * params.p };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** What a hash is for: checking a sign-in's password, or hashing a new one (sign-up, reset, CLI). */
export type HashPurpose = 'sign-in' | 'new-password';

/**
 * Each hash holds about 128 MiB while it runs, so only a few run at once and a short queue
 * waits behind them; past that the caller gets 429 instead of the server running out of memory.
 *
 * So that guests cannot keep people from signing in by filling the queue: one client address
 * may have at most `perOwner` hashes running or waiting, sign-ins wait ahead of new passwords,
 * and new passwords may fill the waiting line only up to `reservedForSignIn` places short.
 */
export class HashQueue {
  #running = 0;
  readonly #signIns: Array<() => void> = [];
  readonly #others: Array<() => void> = [];
  readonly #perOwnerCount = new Map<string, number>();

  readonly #concurrency: number;
  readonly #maxWaiting: number;
  readonly #perOwner: number;
  readonly #reservedForSignIn: number;

  constructor(concurrency = 2, maxWaiting = 32, opts: { perOwner?: number; reservedForSignIn?: number } = {}) {
    this.#concurrency = concurrency;
    this.#maxWaiting = maxWaiting;
    this.#perOwner = opts.perOwner ?? 6;
    this.#reservedForSignIn = Math.min(opts.reservedForSignIn ?? Math.floor(maxWaiting / 4), maxWaiting);
  }

  /** `owner` is the client address the work is for (none: the operator CLI); `purpose` sets its place in line. */
  async run<T>(work: () => Promise<T>, owner?: string, purpose: HashPurpose = 'new-password'): Promise<T> {
    const busy = new AppError('TooManyError', 'Too many sign-in attempts are being processed. Please try again shortly.');
    if (owner !== undefined && (this.#perOwnerCount.get(owner) ?? 0) >= this.#perOwner) throw busy;
    if (this.#running >= this.#concurrency) {
      const waiting = this.#signIns.length + this.#others.length;
      const room = purpose === 'sign-in' ? this.#maxWaiting : this.#maxWaiting - this.#reservedForSignIn;
      if (waiting >= this.#maxWaiting || (purpose !== 'sign-in' && this.#others.length >= room)) throw busy;
    }
    if (owner !== undefined) this.#perOwnerCount.set(owner, (this.#perOwnerCount.get(owner) ?? 0) + 1);
    try {
      if (this.#running >= this.#concurrency) {
        // Woken by a finishing hash, which hands its place over: the count stays as it is.
        await new Promise<void>((resolve) => (purpose === 'sign-in' ? this.#signIns : this.#others).push(resolve));
      } else {
        this.#running += 1;
      }
      try {
        return await work();
      } finally {
        const next = this.#signIns.shift() ?? this.#others.shift();
        if (next) next();
        else this.#running -= 1;
      }
    } finally {
      if (owner !== undefined) {
        const left = (this.#perOwnerCount.get(owner) ?? 1) - 1;
        if (left > 0) this.#perOwnerCount.set(owner, left);
        else this.#perOwnerCount.delete(owner);
      }
    }
  }
}

/** Password hashing with `node:crypto` scrypt, a random salt per hash, parameters stored with it. */
export class PasswordHasher {
  readonly #queue: HashQueue;
  readonly #params: ScryptParams;

  /** `params`: the cost of new hashes; a stored hash is checked at the cost it was made with. */
  constructor(queue = new HashQueue(), params: ScryptParams = OWASP_SCRYPT) {
    this.#queue = queue;
    this.#params = params;
  }

  /**
   * `scrypt$N$r$p$salt$key`, base64url: the parameters travel with the hash, so they can be
   * raised later. `owner` is the client address asking (none for the operator CLI).
   */
  hash(password: string, owner?: string): Promise<string> {
    return this.#queue.run(
      async () => {
        const salt = randomBytes(16);
        const params = this.#params;
        const key = await derive(password, salt, params);
        return ['scrypt', params.N, params.r, params.p, salt.toString('base64url'), key.toString('base64url')].join('$');
      },
      owner,
      'new-password',
    );
  }

  /**
   * Compares in constant time. With no stored hash (an unknown account) it still derives a key,
   * so a wrong id and a wrong password take the same time.
   */
  verify(password: string, stored: string | null, owner?: string): Promise<boolean> {
    return this.#queue.run(
      async () => {
        const parsed = stored ? parseHash(stored) : null;
        const salt = parsed?.salt ?? randomBytes(16);
        const key = await derive(password, salt, parsed?.params ?? this.#params);
        return parsed !== null && safeEqual(key, parsed.key);
      },
      owner,
      'sign-in',
    );
  }
}

function parseHash(stored: string): { params: ScryptParams; salt: Buffer; key: Buffer } | null {
  const [scheme, n, r, p, salt, key] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !key) return null;
  return {
    params: { N: Number(n), r: Number(r), p: Number(p) },
    salt: Buffer.from(salt, 'base64url'),
    key: Buffer.from(key, 'base64url'),
  };
}
