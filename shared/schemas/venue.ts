import { z } from 'zod';
import { NonEmptyString } from './common.ts';

/** A rating field, a list of them, or a displayed name mapped to ordered fallback field names. */
export const ReviewRatingName = z.union([
  z.string(),
  z.array(z.union([z.string(), z.record(z.string(), z.array(z.string()).min(1))])),
]);

/**
 * The venue author-console configuration. Parsing applies the spec's defaults
 * (`decisionName` → `Decision`, `showAuthorProfileStatus` → true).
 *
 * The spec does not mark this object closed; we reject unknown keys anyway, so that a
 * misspelt optional key (`decisonName`) is reported instead of silently falling back to
 * its default.
 */
export const AuthorConsoleConfig = z
  .strictObject({
    header: z.strictObject({ title: z.string().optional(), instructions: z.string().optional() }),
    apiVersion: z.union([z.literal(1), z.literal(2)]),
    venueId: NonEmptyString,
    submissionId: NonEmptyString,
    authorSubmissionField: NonEmptyString,
    officialReviewName: NonEmptyString,
    decisionName: NonEmptyString.default('Decision'),
    reviewRatingName: ReviewRatingName,
    reviewConfidenceName: NonEmptyString,
    authorName: NonEmptyString,
    submissionName: NonEmptyString,
    showAuthorProfileStatus: z.boolean().default(true),
    /** Deprecated; version 1 only. */
    blindSubmissionId: NonEmptyString.optional(),
    showPublisherCopyright: z.boolean().optional(),
    PublisherPublicationTitle: z.string().optional(),
    PublisherArtSourceCode: z.number().optional(),
  })
  .superRefine((config, ctx) => {
    if (config.blindSubmissionId !== undefined && config.apiVersion !== 1) {
      ctx.addIssue({
        code: 'custom',
        path: ['blindSubmissionId'],
        message: 'blindSubmissionId is deprecated and applies only to apiVersion 1',
      });
    }
  });
export type AuthorConsoleConfig = z.infer<typeof AuthorConsoleConfig>;
export type AuthorConsoleConfigInput = z.input<typeof AuthorConsoleConfig>;
