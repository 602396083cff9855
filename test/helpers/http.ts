/** A small HTTP client for tests: JSON in and out, and the cookies a browser would keep. */
export interface Reply<T = unknown> {
  status: number;
  body: T;
  headers: Headers;
  cookies: Record<string, { value: string; attributes: string }>;
}

export class Client {
  readonly url: string;
  readonly jar = new Map<string, string>();
  bearer: string | undefined;

  constructor(url: string) {
    this.url = url;
  }

  async request<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply<T>> {
    const send: Record<string, string> = { ...headers };
    if (body !== undefined && typeof body !== 'string') send['content-type'] = 'application/json';
    if (typeof body === 'string' && !send['content-type']) send['content-type'] = 'application/json';
    if (this.jar.size > 0) send.cookie = [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ');
    if (this.bearer) send.authorization = `Bearer ${this.bearer}`;
    const res = await fetch(this.url + path, {
      method,
      headers: send,
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const cookies: Reply['cookies'] = {};
    for (const line of res.headers.getSetCookie()) {
      const [pair = '', ...attrs] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = decodeURIComponent(pair.slice(eq + 1).trim());
      cookies[name] = { value, attributes: attrs.join(';').trim() };
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.jar.delete(name);
      else this.jar.set(name, value);
    }
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, body: parsed as T, headers: res.headers, cookies };
  }

  get<T = any>(path: string, headers?: Record<string, string>) {
    return this.request<T>('GET', path, undefined, headers);
  }

  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('POST', path, body, headers);
  }
}
