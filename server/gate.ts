import { AppError } from '../shared/errors.ts';

/**
 * At most `width` pieces of heavy work at once, at most `maxWaiting` more waiting their turn, and
 * at most `perOwner` of one owner's (a person, a guest's address: the caller's to say) running or waiting; past either
 * limit the work is refused at once rather than queued without end: 429 when it is the owner's
 * own limit, 503 with `Retry-After` when the service is busy. What each piece holds while it runs
 * (a list of notes read whole, for one) is then bounded by the width, whatever is sent at once.
 */
export class Gate {
  readonly #width: number;
  readonly #maxWaiting: number;
  readonly #perOwner: number;
  readonly #what: string;
  #running = 0;
  readonly #waiting: Array<() => void> = [];
  readonly #byOwner = new Map<string, number>();

  /** `what`: the work, as its refusals name it ("note lists"). */
  constructor(opts: { width: number; maxWaiting: number; perOwner: number; what: string }) {
    this.#width = opts.width;
    this.#maxWaiting = opts.maxWaiting;
    this.#perOwner = opts.perOwner;
    this.#what = opts.what;
  }

  async run<T>(owner: string, work: () => Promise<T>): Promise<T> {
    const held = this.#byOwner.get(owner) ?? 0;
    if (held >= this.#perOwner) throw new AppError('TooManyError', `Too many ${this.#what} asked for at once. Please wait for the ones under way.`, { retryAfter: 1 });
    const full = this.#running >= this.#width;
    if (full && this.#waiting.length >= this.#maxWaiting) {
      throw new AppError('ServiceUnavailableError', `The service is busy with ${this.#what}. Please try again in a moment.`, { retryAfter: 1 });
    }
    this.#byOwner.set(owner, held + 1);
    try {
      // A place is handed on by the work that ends (below), so the count stays right.
      if (full) await new Promise<void>((resolve) => this.#waiting.push(resolve));
      else this.#running += 1;
      try {
        return await work();
      } finally {
        const next = this.#waiting.shift();
        if (next) next();
        else this.#running -= 1;
      }
    } finally {
      const left = (this.#byOwner.get(owner) ?? 1) - 1;
      if (left === 0) this.#byOwner.delete(owner);
      else this.#byOwner.set(owner, left);
    }
  }
}
