/**
 * How many times per second an operation completes with `concurrency` of it in flight, after a
 * warm-up: the measure of the baselines that are a bare loop (jose, scrypt). Prints it as the
 * one JSON line the runner reads.
 */
export async function printRate(operation: () => Promise<unknown>, opts: { concurrency: number; warmupMs: number; seconds: number }): Promise<void> {
  const runFor = async (ms: number): Promise<number> => {
    const until = performance.now() + ms;
    let count = 0;
    await Promise.all(
      Array.from({ length: opts.concurrency }, async () => {
        while (performance.now() < until) {
          await operation();
          count += 1;
        }
      }),
    );
    return count;
  };
  await runFor(opts.warmupMs);
  const started = performance.now();
  const count = await runFor(opts.seconds * 1000);
  console.log(JSON.stringify({ perSecond: count / ((performance.now() - started) / 1000) }));
}
