import { RE2JS } from 're2js';

/**
 * The regular expressions of forms (`value.param.regex`), run by RE2 (its JavaScript port): a
 * match takes time linear in the value, whatever the pattern. An organiser writes these
 * patterns and anyone posting a note runs them, so a backtracking engine would let one pattern
 * such as `(a|a)*c` stop the server for seconds per request. RE2 has no backreferences or
 * lookaround; a pattern that needs them is refused when the form is saved. Server and client
 * run the same engine, so a client's check before sending agrees with the server's.
 */
const compiled = new Map<string, RE2JS | null>();
const KEPT = 500;

function compile(pattern: string): RE2JS | null {
  let found = compiled.get(pattern);
  if (found === undefined) {
    try {
      found = RE2JS.compile(`(?:${pattern})`);
    } catch {
      found = null;
    }
    if (compiled.size >= KEPT) compiled.clear();
    compiled.set(pattern, found);
  }
  return found;
}

/** Whether RE2 can run the pattern (no backreferences, no lookaround, valid syntax). */
export function isLinearPattern(pattern: string): boolean {
  return compile(pattern) !== null;
}

/** Whether the whole value matches the pattern; a pattern RE2 cannot run matches nothing. */
export function matchesWhole(pattern: string, value: string): boolean {
  return compile(pattern)?.matches(value) ?? false;
}
