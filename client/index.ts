/**
 * The typed client of the service: every procedure of the server's router, with its input and
 * output types, over tRPC's HTTP transport, plus what tRPC does not carry (uploads, downloads).
 * It keeps the session token it was given or that `login` returned and sends it as a bearer
 * token, so it works outside a browser too; a call that answers 401 refreshes the session once
 * and is sent again.
 */
import { createTRPCClient, httpLink, type TRPCClient } from '@trpc/client';
import type { AppRouter } from '../server/router.ts';
import type { LoginInput, MfaPendingResult, MfaVerifyInput, PasskeyLoginInput, SessionResult } from '../shared/index.ts';
import { Files, type DownloadedFile, type DownloadOptions, type UploadOptions } from './files.ts';
import { Session } from './transport.ts';

export * from '../shared/index.ts';
export { ApiError } from './transport.ts';
export { checkFile, type DownloadedFile, type DownloadOptions, type Progress, type UploadOptions } from './files.ts';
export type { AppRouter };

/**
 * `login` of a person with a second factor on: no session yet. `pending` says which methods the
 * person has; `completeMfa` (after `api.accounts.mfa.challenge` for an emailed code) finishes.
 */
export class MfaRequiredError extends Error {
  readonly pending: MfaPendingResult;

  constructor(pending: MfaPendingResult) {
    super(`A second factor is needed: ${pending.mfaMethods.join(', ')}`);
    this.name = 'MfaRequiredError';
    this.pending = pending;
  }
}

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
  /** Throws `MfaRequiredError` when the person has a second factor on. */
  login(input: LoginInput): Promise<SessionResult>;
  /** The second step of a sign-in (`POST /mfa/verify`); keeps the session it opens. */
  completeMfa(input: MfaVerifyInput): Promise<SessionResult>;
  /**
   * A sign-in with a passkey and no password (`POST /login/passkey`): the challenge id from
   * `api.accounts.passkeyLoginOptions` and the authenticator's answer; keeps the session it opens.
   */
  loginWithPasskey(input: PasskeyLoginInput): Promise<SessionResult>;
  /** A new access token (from the refresh cookie, or the still-valid token). */
  refresh(): Promise<SessionResult>;
  logout(): Promise<void>;
  attachments: {
    /** Checks the file against the field, sends it whole or in chunks, answers its URL. */
    upload(file: Blob, options: UploadOptions): Promise<{ url: string }>;
    /** A note's file, streamed. */
    download(options: DownloadOptions): Promise<DownloadedFile>;
  };
}

export function createClient(options: ClientOptions): Client {
  const session = new Session(options);
  const api = createTRPCClient<AppRouter>({
    links: [httpLink({ url: `${session.baseUrl}/trpc`, fetch: session.fetch })],
  });
  const files = new Files(session);
  return {
    api,
    get token() {
      return session.token;
    },
    login: async (input) => {
      const result = await api.accounts.login.mutate(input);
      if ('mfaPending' in result) throw new MfaRequiredError(result);
      return session.keep(result);
    },
    completeMfa: async (input) => session.keep(await api.accounts.mfa.verify.mutate(input)),
    loginWithPasskey: async (input) => session.keep(await api.accounts.passkeyLogin.mutate(input)),
    refresh: () => session.refresh(),
    async logout() {
      await api.accounts.logout.mutate();
      session.forget();
    },
    attachments: {
      upload: (file, uploadOptions) => files.upload(file, uploadOptions),
      download: (downloadOptions) => files.download(downloadOptions),
    },
  };
}
