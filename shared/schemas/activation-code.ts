import { z } from 'zod';
import { AccountId } from './common.ts';

/**
 * "Type the code" (not in the spec): the address the sign-up mail went to (or the profile id)
 * and the 6-digit code it carries, for a person who would rather type it than follow the link.
 */
export const ActivationCodeInput = z.strictObject({
  id: AccountId,
  code: z.string().trim().regex(/^\d{6}$/, { message: 'The code is 6 digits' }),
});
export type ActivationCodeInput = z.infer<typeof ActivationCodeInput>;

/** The token of a new activation link, for the activation page (the mailed link is replaced by it). */
export const ActivationCodeResult = z.strictObject({ token: z.string() });
export type ActivationCodeResult = z.infer<typeof ActivationCodeResult>;
