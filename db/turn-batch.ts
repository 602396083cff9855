/**
 * Calls made within one turn of the event loop, sent to the database together. The first call of
 * a turn schedules the batch for the end of the turn (`setImmediate`: after the turn's I/O
 * callbacks, so every request read in that turn has had its say), and `run` gets up to `most`
 * items at a time, answering each item's result in order. A batch is one statement, so either
 * all of its writes happen or none: when a run of several items fails for one item's sake
 * (`runAlone`, as a row that breaks a constraint: a client deleted meanwhile on PostgreSQL),
 * each item is run again alone, so only that item fails; any other failure (the database busy,
 * its pool exhausted) fails every item of the run at once, rather than adding a statement per
 * item to a database that could not take one.
 *
 * What it saves: every statement is a hop to libuv's thread pool and back, each hop a kernel
 * wake-up on both sides, and each SQLite commit a write to the log; under load, many requests
 * read in one turn share one of each (`docs/performance.md`, Sign-ins). A call alone waits only
 * for the end of its turn.
 */
export class TurnBatch<I, O> {
  readonly #run: (items: readonly I[]) => Promise<readonly O[]>;
  readonly #most: number;
  readonly #runAlone: (error: unknown) => boolean;
  #waiting: Array<Waiting<I, O>> = [];

  /** `runAlone`: whether a run's failure may be one item's, so each is run again alone. */
  constructor(run: (items: readonly I[]) => Promise<readonly O[]>, opts: { most: number; runAlone: (error: unknown) => boolean }) {
    if (!Number.isInteger(opts.most) || opts.most < 1) throw new Error('TurnBatch: most must be a whole number from 1');
    this.#run = run;
    this.#most = opts.most;
    this.#runAlone = opts.runAlone;
  }

  /** `item`'s result, once the batch it joined has run. */
  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      if (this.#waiting.push({ item, resolve, reject }) === 1) setImmediate(() => this.#flush());
    });
  }

  #flush(): void {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (let start = 0; start < waiting.length; start += this.#most) {
      const part = waiting.slice(start, start + this.#most);
      this.#settle(part).catch((error: unknown) => {
        if (part.length === 1 || !this.#runAlone(error)) {
          for (const entry of part) entry.reject(error);
          return;
        }
        for (const entry of part) this.#settle([entry]).catch(entry.reject);
      });
    }
  }

  /** Runs `part`'s items together and answers each its result; rejects when the run fails. */
  async #settle(part: readonly Waiting<I, O>[]): Promise<void> {
    const results = await this.#run(part.map((entry) => entry.item));
    if (results.length !== part.length) throw new Error(`TurnBatch: ${results.length} results for ${part.length} items`);
    part.forEach((entry, i) => entry.resolve(results[i] as O));
  }
}

type Waiting<I, O> = { item: I; resolve: (result: O) => void; reject: (error: unknown) => void };
