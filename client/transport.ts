/**
 * How the client talks to the service: one `fetch` that carries the session and, when a call
 * answers 401, refreshes the session once and sends the call again, as browser clients of this
 * kind of service do. The typed procedures (tRPC) and the REST calls (uploads, downloads) both
 * go through it.
 */
import { ErrorBody, REFRESH_TOKEN_COOKIE, SessionResult } from '../shared/index.ts';

/** An answer of the service that is not a success: the spec's Error body, thrown. */
export class ApiError extends Error {
  readonly status: number;
  readonly details: Record<string, unknown> | undefined;
  readonly errors: ErrorBody['errors'];

  constructor(body: ErrorBody) {
    super(body.message);
    this.name = body.name;
    this.status = body.status;
    this.details = body.details;
    this.errors = body.errors;
  }

  /** The Error body of an answer, or one made up when the answer has none (a proxy's 502). */
  static async from(response: Response): Promise<ApiError> {
    const text = await response.text().catch(() => '');
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const body = ErrorBody.safeParse(parsed);
    if (body.success) return new ApiError(body.data);
    return new ApiError({ status: response.status, name: 'HttpError', message: `${response.status} ${response.statusText}`.trim() });
  }
}

export interface SessionOptions {
  baseUrl: string;
  token?: string | undefined;
  fetch?: typeof globalThis.fetch | undefined;
}

/**
 * The session the client holds: its access token (sent as a bearer token) and, outside a
 * browser, the refresh cookie the service set (a browser keeps that cookie itself, and hides
 * it from scripts).
 */
export class Session {
  readonly baseUrl: string;
  token: string | undefined;
  #refreshCookie: string | undefined;
  #refreshing: Promise<SessionResult> | null = null;
  readonly #fetch: typeof globalThis.fetch;

  constructor(options: SessionOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.token = options.token;
    // Called through a function, so a fetch that needs `this === window` still gets it.
    const given = options.fetch;
    this.#fetch = given ? (input, init) => given(input, init) : (input, init) => globalThis.fetch(input, init);
  }

  /** Takes in a new session (login, refresh, activation). */
  keep(session: SessionResult): SessionResult {
    this.token = session.token;
    return session;
  }

  forget(): void {
    this.token = undefined;
    this.#refreshCookie = undefined;
  }

  /**
   * `fetch` with the session: on a 401 it refreshes the session once (one refresh shared by all
   * calls that failed together) and sends the call again; a second 401 is the caller's.
   */
  readonly fetch = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const sentWith = this.token;
    const response = await this.#send(input, init);
    if (response.status !== 401 || this.#isRefresh(input)) return response;
    if (!(await this.#refreshOnce(sentWith))) return response;
    await response.body?.cancel().catch(() => undefined);
    return this.#send(input, init);
  };

  /** Refreshes unless another call already did since `sentWith` was the token; true when there is a new one. */
  async #refreshOnce(sentWith: string | undefined): Promise<boolean> {
    if (this.token !== sentWith) return true;
    return this.refresh().then(
      () => true,
      () => false,
    );
  }

  /**
   * `POST /refreshToken`: a new access token from the refresh cookie. Calls made while one is
   * under way share it: the refresh token rotates, so a second one sent alongside would fail.
   */
  refresh(): Promise<SessionResult> {
    this.#refreshing ??= this.#refresh().finally(() => {
      this.#refreshing = null;
    });
    return this.#refreshing;
  }

  async #refresh(): Promise<SessionResult> {
    const response = await this.#send(`${this.baseUrl}/refreshToken`, { method: 'POST' });
    if (!response.ok) throw await ApiError.from(response);
    return this.keep(SessionResult.parse(await response.json()));
  }

  #isRefresh(input: string | URL | Request): boolean {
    const url = input instanceof Request ? input.url : String(input);
    return /\/(refreshToken|accounts\.refreshToken)(\?|$)/.test(url);
  }

  async #send(input: string | URL | Request, init: RequestInit): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.token) headers.set('authorization', `Bearer ${this.token}`);
    if (this.#refreshCookie) headers.set('cookie', `${REFRESH_TOKEN_COOKIE}=${encodeURIComponent(this.#refreshCookie)}`);
    const response = await this.#fetch(input, { credentials: 'include', ...init, headers });
    this.#takeCookies(response);
    return response;
  }

  /** Outside a browser, keeps the refresh cookie the service sets (browsers never show it). */
  #takeCookies(response: Response): void {
    const lines = typeof response.headers.getSetCookie === 'function' ? response.headers.getSetCookie() : [];
    for (const line of lines) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      if (pair.slice(0, eq).trim() !== REFRESH_TOKEN_COOKIE) continue;
      const value = decodeURIComponent(pair.slice(eq + 1).trim());
      this.#refreshCookie = value === '' || /expires=Thu, 01 Jan 1970/i.test(line) ? undefined : value;
    }
  }

  /** A REST call answering JSON: the parsed body, or an ApiError. */
  async json<T>(method: string, path: string, init: RequestInit = {}): Promise<T> {
    const response = await this.fetch(`${this.baseUrl}${path}`, { ...init, method });
    if (!response.ok) throw await ApiError.from(response);
    return (await response.json()) as T;
  }
}
