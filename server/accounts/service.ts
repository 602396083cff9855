// The accounts services live in sign-up.ts, sessions.ts and profiles.ts (part.ts holds what
// they share). Until server/oidc imports those modules itself, it finds these names here.
export { ACTIVE_STATES } from './session-rule.ts';
export { preferredEmail } from './profiles.ts';
export type { Viewer } from './viewer.ts';
