/**
 * The typed client of the service: every procedure of the server's router, with its input and
 * output types, over tRPC's HTTP transport. It keeps the session token it was given or that
 * `login` returned and sends it as a bearer token, so it works outside a browser too.
 */
import { createTRPCClient, httpLink, type TRPCClient } from '@trpc/client';
import type { AppRouter } from '../server/router.ts';
import type { LoginInput, SessionResult } from '../shared/index.ts';

export * from '../shared/index.ts';
export type { AppRouter };

export interface ClientOptions {
  /** The service's address, e.g. `https://api.example.org`. */
  baseUrl: string;
  /** A session token to start with. */
  token?: string | undefined;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof globalThis.fetch | undefined;
}

export interface Client {
  /** Every procedure, e.g. `client.api.accounts.profiles.query()`. */
  api: TRPCClient<AppRouter>;
  /** The session token sent with each call, if any. */
  readonly token: string | undefined;
  login(input: LoginInput): Promise<SessionResult>;
  refresh(): Promise<SessionResult>;
  logout(): Promise<void>;
}

export function createClient(options: ClientOptions): Client {
  let token = options.token;
  const api = createTRPCClient<AppRouter>({
    links: [
      httpLink({
        url: `${options.baseUrl.replace(/\/+$/, '')}/trpc`,
        ...(options.fetch ? { fetch: options.fetch } : {}),
        headers: () => (token ? { authorization: `Bearer ${token}` } : {}),
      }),
    ],
  });
  const keep = (session: SessionResult): SessionResult => {
    token = session.token;
    return session;
  };
  return {
    api,
    get token() {
      return token;
    },
    login: async (input) => keep(await api.accounts.login.mutate(input)),
    refresh: async () => keep(await api.accounts.refreshToken.mutate()),
    async logout() {
      await api.accounts.logout.mutate();
      token = undefined;
    },
  };
}
