/**
 * Work done one after another per key, in the order places were taken, within this process: a
 * person's new uploads (their count and row, `UploadsService.inTurn`), a file's tus parts
 * (`TusSpans.line`). The order is the order places were taken: a tus part takes its place before
 * anything is awaited, so the order requests reached the process; a new upload when its caller
 * reaches `inTurn`. Every place taken is run or let go.
 */
export interface Turn {
  /** `work`, once every place before this one was run or let go. */
  run<T>(work: () => Promise<T>): Promise<T>;
  /** Gives the place up without running anything. */
  leave(): void;
}

export class KeyedLine {
  /** The last place in line, by key; gone once it is done. */
  readonly #last = new Map<string, Promise<void>>();

  /** A place in line for `key`, taken now. */
  take(key: string): Turn {
    const before = this.#last.get(key) ?? Promise.resolve();
    let leave!: () => void;
    const mine = new Promise<void>((resolve) => (leave = resolve));
    const after = before.then(() => mine);
    this.#last.set(key, after);
    void after.then(() => {
      if (this.#last.get(key) === after) this.#last.delete(key);
    });
    return {
      async run<T>(work: () => Promise<T>): Promise<T> {
        await before;
        try {
          return await work();
        } finally {
          leave();
        }
      },
      leave,
    };
  }

  /** `work` in its turn for `key`: after the work of every place taken before it. */
  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    return this.take(key).run(work);
  }
}
