import { z } from 'zod';
import { NonEmptyString, StringList, Timestamp } from './common.ts';

/** One entry of a group's `content`: every key optional, `delete` may only be `true`. */
export const ContentEntry = z.strictObject({
  description: NonEmptyString.optional(),
  order: z.int().min(1).optional(),
  delete: z.literal(true).optional(),
  value: z
    .union([z.string(), z.number(), z.boolean(), z.record(z.string(), z.unknown()), z.array(z.unknown())])
    .optional(),
  readers: z.union([z.record(z.string(), z.unknown()), StringList]).optional(),
});

export const ContentSchema = z.record(z.string(), ContentEntry);
export type ContentSchema = z.infer<typeof ContentSchema>;

export const Group = z.strictObject({
  id: NonEmptyString,
  instructions: z.string().optional(),
  description: z.string().optional(),
  invitations: StringList.min(1).optional(),
  parentInvitations: NonEmptyString.optional(),
  parent: z.string().nullable().optional(),
  content: ContentSchema.optional(),
  cdate: Timestamp.optional(),
  mdate: Timestamp.optional(),
  ddate: Timestamp.optional(),
  tcdate: Timestamp.optional(),
  tmdate: Timestamp.optional(),
  tauthor: z.string().optional(),
  readers: StringList.optional(),
  nonreaders: StringList.optional(),
  writers: StringList.optional(),
  signatories: StringList.optional(),
  signatures: StringList.optional(),
  members: StringList.optional(),
  deanonymizers: StringList.optional(),
  impersonators: StringList.optional(),
  host: z.string().nullable().optional(),
  web: z.string().nullable().optional(),
  domain: z.string().nullable().optional(),
  anonids: z.boolean().optional(),
  secret: z.string().optional(),
  details: z.strictObject({ writable: z.boolean().optional() }).optional(),
}).meta({ id: 'Group' });
export type Group = z.infer<typeof Group>;
