/**
 * Waits until `condition` holds, checking it every few milliseconds, and fails after `withinMs`:
 * a test waits for the event it expects (a temporary file removed, a request sent), never for a
 * fixed time.
 */
export async function waitUntil(condition: () => boolean | Promise<boolean>, what: string, withinMs = 5000): Promise<void> {
  const deadline = performance.now() + withinMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`still not ${what} after ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
