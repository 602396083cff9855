export * from './errors.ts';
export * from './forms.ts';
export * from './schemas/attachments.ts';
export * from './schemas/common.ts';
export * from './schemas/health.ts';
export * from './schemas/group.ts';
export * from './schemas/moderation.ts';
export * from './schemas/profile.ts';
export * from './schemas/profile-edit.ts';
export * from './schemas/session.ts';
export * from './schemas/tokens.ts';
export * from './schemas/venue.ts';

/** Lifetimes the spec fixes for the sign-in provider. */
export const OIDC_TOKEN_SECONDS = 60 * 60;
export const OIDC_CODE_SECONDS = 10 * 60;

/** The session cookies (the spec names the first). */
export const ACCESS_TOKEN_COOKIE = 'service.accessToken';
export const REFRESH_TOKEN_COOKIE = 'service.refreshToken';
/**
 * Who is signed in, readable by the pages' scripts (the platform's web client reads it as its
 * `USER_TOKEN_NAME`, `openreview.user` there): the access token's `user`, as JSON. No credential.
 */
export const USER_COOKIE = 'service.user';
/** A browser that signed in to an account keeps its own sign-in allowance for it (server/accounts/device-cookies.ts). */
export const DEVICE_COOKIE = 'service.device';
export * from './schemas/oidc.ts';
export * from './schemas/security.ts';
export * from './schemas/mfa.ts';
export * from './schemas/passkeys.ts';
export * from './schemas/your-data.ts';
export * from './schemas/oidc-registration.ts';
export * from './schemas/oidc-protocol.ts';
export * from './schemas/activation-code.ts';
