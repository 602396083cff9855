import type { Impersonator, SessionResult } from '../../shared/index.ts';
import type { TokenUser } from './session-tokens.ts';

/**
 * What accounts hand to the rest of the service about a request's caller and the sessions it
 * opens. Every area reads these; none needs accounts' services to name them.
 */

/** The signed-in caller of a request, resolved from its access token. */
export interface Viewer {
  profileId: string;
  sessionId: string;
  loginEmail: string;
  tokenVersion: number;
  isSuperUser: boolean;
  isModerator: boolean;
  /**
   * Whether the person may author (notes, files, deletions): a `Limited` profile may sign in and
   * read, but not author. Read with the session, as the roles are: as of the request's start.
   */
  mayAuthor: boolean;
  /** Set when this session is an impersonation: who is really acting. */
  impersonator: Impersonator | null;
  /** The impersonator's own session, to return to. */
  parentSessionId: string | null;
  /** An impersonation by anyone but a super user: no data may be changed. */
  readOnly: boolean;
  /** When the person signed in to this session (ms). */
  authTime: number;
  /** When the access token this request came with expires (seconds since the epoch). */
  accessExpiresAt: number;
}

/** Where a request comes from, for rate limits and human verification. */
export interface RequestOrigin {
  address: string;
  /** The browser's `User-Agent`, kept with a session it opens (the security page shows it). */
  userAgent?: string | undefined;
}

/** The cookies a browser shows a sign-in: a remembered browser (skips the second factor) and its device cookie (its own allowance). */
export interface BrowserCookies {
  /** `service.mfaTrustedDevice`: a browser remembered by multi-factor sign-in. */
  trustedDevice?: string | undefined;
  /** `service.device`: the browser's device-cookie entries (`device-cookies.ts`). */
  device?: string | undefined;
}

/** What a token-issuing operation hands to the transport: the body, and the cookies to set. */
export interface IssuedSession {
  result: SessionResult;
  accessToken: string;
  accessSeconds: number;
  refreshToken: string;
  refreshSeconds: number;
  /** Who the session is, as its access token says (`tokenUser`): the browser's readable `service.user` cookie. */
  user: TokenUser;
  /** After a sign-in: this browser's new device-cookie entry for the account (`device-cookies.ts`), for the transport to keep. */
  deviceEntry?: string;
}

/**
 * What `POST /refreshToken` hands to the transport: a rotated session (cookies to set), or only
 * a new access token for the same session, which sets no cookie and changes no session row.
 */
export type RefreshOutcome = { rotated: IssuedSession } | { accessOnly: SessionResult };
