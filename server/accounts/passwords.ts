import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { AppError } from '../../shared/errors.ts';

/** OWASP's scrypt parameters: N = 2^17, r = 8, p = 1 (about 128 MiB and a third of a second). */
const PARAMS = { N: 2 ** 17, r: 8, p: 1 } as const;
const KEY_LENGTH = 64;

function derive(password: string, salt: Buffer, params: { N: number; r: number; p: number }): Promise<Buffer> {
  const options: ScryptOptions = { ...params, maxmem: 256 * params.N * params.r * params.p };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/**
 * Each hash holds about 128 MiB while it runs, so only a few run at once and a short queue
 * waits behind them; past that the caller gets 429 instead of the server running out of memory.
 */
export class HashQueue {
  #running = 0;
  readonly #waiting: Array<() => void> = [];

  readonly #concurrency: number;
  readonly #maxWaiting: number;

  constructor(concurrency = 2, maxWaiting = 32) {
    this.#concurrency = concurrency;
    this.#maxWaiting = maxWaiting;
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.#running >= this.#concurrency) {
      if (this.#waiting.length >= this.#maxWaiting) {
        throw new AppError('TooManyError', 'Too many sign-in attempts are being processed. Please try again shortly.');
      }
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
    this.#running += 1;
    try {
      return await work();
    } finally {
      this.#running -= 1;
      this.#waiting.shift()?.();
    }
  }
}

/** Password hashing with `node:crypto` scrypt, a random salt per hash, parameters stored with it. */
export class PasswordHasher {
  readonly #queue: HashQueue;

  constructor(queue = new HashQueue()) {
    this.#queue = queue;
  }

  /** `scrypt$N$r$p$salt$key`, base64url: the parameters travel with the hash, so they can be raised later. */
  hash(password: string): Promise<string> {
    return this.#queue.run(async () => {
      const salt = randomBytes(16);
      const key = await derive(password, salt, PARAMS);
      return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
    });
  }

  /**
   * Compares in constant time. With no stored hash (an unknown account) it still derives a key,
   * so a wrong id and a wrong password take the same time.
   */
  verify(password: string, stored: string | null): Promise<boolean> {
    return this.#queue.run(async () => {
      const parsed = stored ? parseHash(stored) : null;
      const salt = parsed?.salt ?? randomBytes(16);
      const key = await derive(password, salt, parsed?.params ?? PARAMS);
      return parsed !== null && key.length === parsed.key.length && timingSafeEqual(key, parsed.key);
    });
  }
}

function parseHash(stored: string): { params: { N: number; r: number; p: number }; salt: Buffer; key: Buffer } | null {
  const [scheme, n, r, p, salt, key] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !key) return null;
  return {
    params: { N: Number(n), r: Number(r), p: Number(p) },
    salt: Buffer.from(salt, 'base64url'),
    key: Buffer.from(key, 'base64url'),
  };
}
