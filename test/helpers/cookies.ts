/**
 * Cookies as the tests' clients keep and send them: the `Cookie` request header built from a jar,
 * and the `Set-Cookie` lines of an answer read back. A jar keeps a value as it was set (encoded,
 * as a browser keeps it: `service.user` is URL-encoded JSON) and sends it back so.
 */

/** One cookie an answer sets: its value (URL-decoded), as set (`raw`), and the attributes after it. */
export interface SetCookie {
  value: string;
  raw: string;
  attributes: string;
}

/** Cookies by name, as a client keeps them (`Client.jar`, a `Map`) or as pairs. */
export type Jar = Iterable<readonly [string, string]>;

/** The `Cookie` request header sending every cookie of `jar` (a client's own, or pairs); '' for none. */
export function cookieHeader(jar: Jar | { readonly jar: Jar }): string {
  const pairs = Symbol.iterator in jar ? jar : jar.jar;
  return [...pairs].map(([name, value]) => `${name}=${value}`).join('; ');
}

/** The cookies an answer sets, by name. */
export function cookiesOf(answer: Headers | { readonly headers: Headers }): Record<string, SetCookie> {
  const cookies: Record<string, SetCookie> = {};
  for (const line of setCookieLines(answer)) {
    const { name, ...cookie } = parseSetCookie(line);
    cookies[name] = cookie;
  }
  return cookies;
}

/**
 * Keeps in `jar` the cookies an answer sets, and forgets those it clears (an empty value, or an
 * expiry in 1970), as a browser does. Answers the cookies it set, as `cookiesOf`.
 */
export function keepCookies(jar: Map<string, string>, answer: Headers | { readonly headers: Headers }): Record<string, SetCookie> {
  const cookies: Record<string, SetCookie> = {};
  for (const line of setCookieLines(answer)) {
    const { name, ...cookie } = parseSetCookie(line);
    cookies[name] = cookie;
    if (cookie.value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) jar.delete(name);
    else jar.set(name, cookie.raw);
  }
  return cookies;
}

/**
 * The `Cookie` header a browser sends back after an answer that set cookies: all of them, or only
 * those named in `names`; '' for none.
 */
export function sentBack(answer: Headers | { readonly headers: Headers }, ...names: string[]): string {
  const set = Object.entries(cookiesOf(answer)).filter(([name]) => names.length === 0 || names.includes(name));
  return cookieHeader(set.map(([name, cookie]) => [name, cookie.raw] as const));
}

/** One `Set-Cookie` line: the cookie's name, its value (URL-decoded) and its attributes. */
function parseSetCookie(line: string): SetCookie & { name: string } {
  const [pair = '', ...attributes] = line.split(';');
  const eq = pair.indexOf('=');
  const raw = pair.slice(eq + 1).trim();
  return { name: pair.slice(0, eq).trim(), value: decodeURIComponent(raw), raw, attributes: attributes.join(';').trim() };
}

function setCookieLines(answer: Headers | { readonly headers: Headers }): string[] {
  return (answer instanceof Headers ? answer : answer.headers).getSetCookie();
}
