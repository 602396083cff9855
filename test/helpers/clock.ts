/**
 * A clock a test moves forward instead of sleeping. It runs with real time (a server given one
 * behaves as usual) plus an offset that `advance` and `set` change. The service reads it for
 * every expiry it decides itself (sessions' rows, one-time tokens, sign-in codes, keys, uploads);
 * the `exp` and `iat` of a session's JWT follow real time (jose), so a test of an expired token
 * signs one with a past `exp` instead (helpers/session-tokens.ts).
 */
export class TestClock {
  #offset = 0;

  /** Milliseconds since the epoch, as `Date.now` gives them: handed to the server as its `now`. */
  readonly now = (): number => Date.now() + this.#offset;

  /** Moves the clock `ms` forward. */
  advance(ms: number): void {
    this.#offset += ms;
  }

  /** Sets the clock to `ms` since the epoch; it runs on from there. */
  set(ms: number): void {
    this.#offset = ms - Date.now();
  }
}
