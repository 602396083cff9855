import { z } from 'zod';
import { Group } from './group.ts';

/** The data carried by an activation or email-confirmation token (`activatable`). */
export const Activatable = z.strictObject({
  token: z.string().optional(),
  numericToken: z.string().optional(),
  groupId: z.string().optional(),
  action: z.string().optional(),
  username: z.string().optional(),
  duplicateProfile: z.string().optional(),
  /** The date the token expires, as an ISO 8601 string. */
  expireAt: z.string().optional(),
  /**
   * Beyond the spec: whom the token is for, in the shape of a session's `user`, which the real
   * platform's Python client reads (`activatable.user.profile.id`).
   */
  user: z.strictObject({ id: z.string(), profile: z.strictObject({ id: z.string() }) }).optional(),
});
export type Activatable = z.infer<typeof Activatable>;

/** The data carried by a password-reset token (`resettable`): an activatable plus its group. */
export const Resettable = Activatable.extend({ group: Group.optional() });
export type Resettable = z.infer<typeof Resettable>;
