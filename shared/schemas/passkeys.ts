import { z } from 'zod';
import { queryInt } from './common.ts';
import { PasskeyAssertion } from './mfa.ts';
import { MAX_SESSION_SECONDS } from './session.ts';

/**
 * Signing in with a passkey and no password (not on the real platform): `POST
 * /login/passkey/options` begins a ceremony, `POST /login/passkey` ends it with the browser's
 * answer (`@simplewebauthn/browser`'s `startAuthentication`). Binary fields are base64url
 * (plain base64 is read too).
 */

/** WebAuthn request options, as `@simplewebauthn/server` makes them. */
const RequestOptions = z.object({
  challenge: z.string(),
  rpId: z.string().optional(),
  timeout: z.number().optional(),
  userVerification: z.enum(['required', 'preferred', 'discouraged']).optional(),
  allowCredentials: z.array(z.object({ id: z.string(), type: z.string(), transports: z.array(z.string()).optional() })).optional(),
});

export const PasskeyLoginOptionsResult = z.strictObject({
  /** Sent back with the answer: names the ceremony (one use, five minutes). */
  challengeId: z.string(),
  options: RequestOptions,
});
export type PasskeyLoginOptionsResult = z.infer<typeof PasskeyLoginOptionsResult>;

export const PasskeyLoginInput = z.strictObject({
  challengeId: z.string({ error: 'challengeId cannot be empty or missing' }).min(1, 'challengeId cannot be empty or missing').max(200),
  response: PasskeyAssertion,
  /** Lifetime of the session's access token in seconds, as for `POST /login`. */
  expiresIn: z.int().min(1).max(MAX_SESSION_SECONDS).nullish(),
});
export type PasskeyLoginInput = z.infer<typeof PasskeyLoginInput>;

/**
 * `GET /mfa/webauthn-auth`: the page the real platform's Python client opens for a pending
 * sign-in's passkey step; it hands the session to `http://127.0.0.1:{callbackPort}`.
 */
export const WebAuthnAuthQuery = z.object({
  pendingToken: z.string().min(1).max(200),
  callbackPort: queryInt(1, 65535),
});
