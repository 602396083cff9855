import { z } from 'zod';
import { NonEmptyString } from './common.ts';
import { SessionResult } from './session.ts';

/**
 * Multi-factor sign-in, as the real platform's clients speak it (openreview-py
 * `openreview/api/client.py` and `openreview/mfa.py`; openreview-web `app/login/` and
 * `app/profile/password-security/`). One schema per body, used by the procedure, its REST route
 * and the typed client alike.
 */

/** The second factors a person can set up. */
export const MfaFactorMethod = z.enum(['totp', 'emailOtp', 'passkey']);
export type MfaFactorMethod = z.infer<typeof MfaFactorMethod>;

/** What a sign-in's second step may use: a factor, or a recovery code (`recovery`). */
export const MfaMethod = z.enum(['totp', 'emailOtp', 'passkey', 'recovery']);
export type MfaMethod = z.infer<typeof MfaMethod>;

/** The cookie that lets a remembered browser skip the second factor (30 days). */
export const TRUSTED_DEVICE_COOKIE = 'service.mfaTrustedDevice';

/** A 6-digit code as typed: spaces and hyphens a person puts in are taken out by the service. */
const TypedCode = z.string().min(1, 'code cannot be empty').max(64);

/**
 * WebAuthn answers as browsers serialise them (binary fields base64url). Not strict: browsers
 * and libraries add fields over time (`authenticatorAttachment`, `clientExtensionResults`).
 */
const Base64Url = z.string().min(1).max(16_384);
/**
 * The extension outputs a browser reports. None is read here; the common ones are typed (so a
 * WebAuthn library's typed answer fits as it is), any other is dropped.
 */
const ExtensionResults = z
  .object({ appid: z.boolean().optional(), credProps: z.object({ rk: z.boolean().optional() }).optional(), hmacCreateSecret: z.boolean().optional() })
  .default({});
export const PasskeyAssertion = z.object({
  id: Base64Url,
  rawId: Base64Url,
  type: z.literal('public-key'),
  response: z.object({
    clientDataJSON: Base64Url,
    authenticatorData: Base64Url,
    signature: Base64Url,
    userHandle: Base64Url.optional(),
  }),
  authenticatorAttachment: z.enum(['platform', 'cross-platform']).optional(),
  clientExtensionResults: ExtensionResults,
});
export type PasskeyAssertion = z.infer<typeof PasskeyAssertion>;

export const PasskeyAttestation = z.object({
  id: Base64Url,
  rawId: Base64Url,
  type: z.literal('public-key'),
  response: z.object({
    clientDataJSON: Base64Url,
    attestationObject: Base64Url,
    authenticatorData: Base64Url.optional(),
    transports: z.array(z.enum(['ble', 'cable', 'hybrid', 'internal', 'nfc', 'smart-card', 'usb'])).optional(),
    publicKeyAlgorithm: z.number().optional(),
    publicKey: Base64Url.optional(),
  }),
  authenticatorAttachment: z.enum(['platform', 'cross-platform']).optional(),
  clientExtensionResults: ExtensionResults,
});
export type PasskeyAttestation = z.infer<typeof PasskeyAttestation>;

/** WebAuthn creation or request options, as `@simplewebauthn/server` makes them. */
export const WebAuthnOptions = z.looseObject({ challenge: z.string() });

/** `POST /login` for a person with MFA on: no session yet, a token for the second step. */
export const MfaPendingResult = z.strictObject({
  mfaPending: z.literal(true),
  mfaPendingToken: z.string(),
  mfaMethods: z.array(MfaFactorMethod),
  preferredMethod: MfaFactorMethod,
}).meta({ id: 'MfaPendingResult' });
export type MfaPendingResult = z.infer<typeof MfaPendingResult>;

/** What `POST /login` answers: a session, or the second step. */
export const LoginResult = z.union([SessionResult, MfaPendingResult]);
export type LoginResult = z.infer<typeof LoginResult>;

const PendingToken = z.string({ error: 'mfaPendingToken cannot be empty or missing' }).min(1, 'mfaPendingToken cannot be empty or missing').max(200);

/** A pending sign-in's methods (the pages' second step; not in the spec): none when it expired or was finished. */
export const MfaPendingMethodsInput = z.strictObject({ mfaPendingToken: PendingToken });
export type MfaPendingMethodsInput = z.infer<typeof MfaPendingMethodsInput>;
export const MfaPendingMethodsResult = z.strictObject({ methods: z.array(MfaFactorMethod) });
export type MfaPendingMethodsResult = z.infer<typeof MfaPendingMethodsResult>;

/** `POST /mfa/challenge`: mail a code (`emailOtp`) or get WebAuthn request options (`passkey`). */
export const MfaChallengeInput = z.strictObject({ mfaPendingToken: PendingToken, method: MfaMethod });
export type MfaChallengeInput = z.infer<typeof MfaChallengeInput>;

export const MfaChallengeResult = z.union([
  z.strictObject({ method: z.enum(['totp', 'emailOtp', 'recovery']), sent: z.boolean(), expiresIn: z.int().optional() }),
  WebAuthnOptions,
]);
export type MfaChallengeResult = z.infer<typeof MfaChallengeResult>;

/** `POST /mfa/verify`: the second step; for `passkey`, `code` is the assertion. */
export const MfaVerifyInput = z
  .strictObject({
    mfaPendingToken: PendingToken,
    method: MfaMethod,
    code: z.union([TypedCode, PasskeyAssertion]),
    rememberDevice: z.boolean().nullish(),
  })
  .superRefine((body, ctx) => {
    if ((body.method === 'passkey') !== (typeof body.code === 'object')) {
      ctx.addIssue({ code: 'custom', path: ['code'], message: body.method === 'passkey' ? 'code must be the passkey assertion' : 'code must be a string' });
    }
  });
export type MfaVerifyInput = z.infer<typeof MfaVerifyInput>;
export const MfaVerifyResult = SessionResult;

/** `GET /mfa/status`. */
export const MfaStatus = z.strictObject({
  enabled: z.boolean(),
  methods: z.array(MfaFactorMethod),
  preferredMethod: MfaFactorMethod.nullable(),
  recoveryCodesRemaining: z.int(),
  trustedDevicesCount: z.int(),
});
export type MfaStatus = z.infer<typeof MfaStatus>;

/** `PUT /mfa/preferred`. */
export const MfaPreferredInput = z.strictObject({ method: MfaFactorMethod });

/** `POST /mfa/setup/totp/init`: the secret (base32), its `otpauth://` URI and that URI's QR code as a data URL. */
export const TotpInitResult = z.strictObject({ secret: z.string(), qrCodeUrl: z.string(), qrCodeDataUrl: z.string() });
export type TotpInitResult = z.infer<typeof TotpInitResult>;

/** `POST /mfa/setup/totp/verify`. */
export const TotpVerifyInput = z.strictObject({ code: TypedCode });

/** Ten `XXXX-XXXX` codes, shown once: when the first factor is turned on, and on regeneration. */
export const RecoveryCodes = z.array(z.string());
export const RecoveryCodesResult = z.strictObject({ recoveryCodes: RecoveryCodes });

export const TotpVerifyResult = z.strictObject({ totpEnabled: z.literal(true), recoveryCodes: RecoveryCodes.optional() });
export const EmailSetupResult = z.strictObject({ emailOtpEnabled: z.literal(true), recoveryCodes: RecoveryCodes.optional() });

/** `POST /mfa/setup/passkey/verify`. */
export const PasskeyVerifyInput = z.strictObject({ response: PasskeyAttestation, name: z.string().max(100).nullish() });
export const PasskeySummary = z.strictObject({ credentialId: z.string(), name: z.string(), createdAt: z.number(), lastUsedAt: z.number().nullable() });
export const PasskeyVerifyResult = z.strictObject({ passkey: PasskeySummary, recoveryCodes: RecoveryCodes.optional() });
export const PasskeyListResult = z.strictObject({ passkeys: z.array(PasskeySummary) });
export const PasskeyIdParam = z.strictObject({ credentialId: NonEmptyString.max(1024) });

/**
 * `POST /mfa/reauthenticate`: turning a factor off, regenerating recovery codes and adding a
 * passkey need a proof younger than ten minutes: the sign-in itself, or this (the password, or
 * a code of a factor the person has).
 */
export const ReauthenticateInput = z.union([
  z.strictObject({ password: z.string().min(1).max(1024) }),
  z.strictObject({ method: z.enum(['totp', 'emailOtp', 'recovery']), code: TypedCode }),
]);
export type ReauthenticateInput = z.infer<typeof ReauthenticateInput>;
export const ReauthenticateResult = z.strictObject({ reauthenticatedUntil: z.number() });

/** `POST /mfa/reauthenticate/challenge`: mails a code for `POST /mfa/reauthenticate` with `emailOtp`. */
export const ReauthChallengeResult = z.strictObject({ method: z.literal('emailOtp'), sent: z.literal(true), expiresIn: z.int() });

/** What the management operations that only change state answer. */
export const MfaChangeResult = z.strictObject({ status: z.literal('ok'), enabled: z.boolean() });
