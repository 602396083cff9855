/**
 * Calls made within one turn of the event loop, sent to the database together. The first call of
 * a turn schedules the batch for the end of the turn (`setImmediate`: after the turn's I/O
 * callbacks, so every request read in that turn has had its say), and `run` gets up to `most`
 * items at a time, answering each item's result in order. A failed run fails each of its items
 * with the same error, as each would have failed alone: a batch is one statement, so either all
 * of its writes happen or none.
 *
 * What it saves: every statement is a hop to libuv's thread pool and back, each hop a kernel
 * wake-up on both sides, and each SQLite commit a write to the log; under load, many requests
 * read in one turn share one of each (`docs/performance.md`, Sign-ins). A call alone waits only
 * for the end of its turn.
 */
export class TurnBatch<I, O> {
  readonly #run: (items: readonly I[]) => Promise<readonly O[]>;
  readonly #most: number;
  #waiting: Array<{ item: I; resolve: (result: O) => void; reject: (error: unknown) => void }> = [];

  constructor(run: (items: readonly I[]) => Promise<readonly O[]>, most: number) {
    if (!Number.isInteger(most) || most < 1) throw new Error('TurnBatch: most must be a whole number from 1');
    this.#run = run;
    this.#most = most;
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
      let running: Promise<readonly O[]>;
      try {
        running = this.#run(part.map((entry) => entry.item));
      } catch (error) {
        running = Promise.reject(error);
      }
      running.then(
        (results) => {
          if (results.length !== part.length) {
            const error = new Error(`TurnBatch: ${results.length} results for ${part.length} items`);
            for (const entry of part) entry.reject(error);
            return;
          }
          part.forEach((entry, i) => entry.resolve(results[i] as O));
        },
        (error: unknown) => {
          for (const entry of part) entry.reject(error);
        },
      );
    }
  }
}
