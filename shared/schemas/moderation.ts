import { z } from 'zod';

export const ModerationDecision = z.enum(['accept', 'reject', 'block', 'unblock', 'delete', 'restore', 'limit']);
export type ModerationDecision = z.infer<typeof ModerationDecision>;

/** Body of `POST /profile/moderate`. */
export const ModerateProfileInput = z.strictObject({
  id: z.string(),
  decision: ModerationDecision,
  sendMail: z.boolean().nullable().optional(),
  reason: z.string().nullable().optional(),
});
export type ModerateProfileInput = z.infer<typeof ModerateProfileInput>;
