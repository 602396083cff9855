import type { AuthorConsoleConfig, FormDefinition } from '../../shared/index.ts';

// The forms of a venue's official reviews and decisions, as its author-console configuration
// names their fields; the author console reads the notes written with them.

/** The field of a decision note that holds the decision: `decisionName`, lower-cased. */
export const decisionField = (config: Pick<AuthorConsoleConfig, 'decisionName'>) => config.decisionName.toLowerCase();

/** A rating entry as configured: one displayed name and the fields to try, in order. */
export function ratingFields(reviewRatingName: AuthorConsoleConfig['reviewRatingName']): Array<{ display: string; fields: string[] }> {
  const entries = typeof reviewRatingName === 'string' ? [reviewRatingName] : reviewRatingName;
  return entries.flatMap((entry) =>
    typeof entry === 'string' ? [{ display: entry, fields: [entry] }] : Object.entries(entry).map(([display, fields]) => ({ display, fields })),
  );
}

/** The official review form: one field per configured rating field, the confidence, the review text. */
export function reviewForm(config: AuthorConsoleConfig): FormDefinition {
  const rating = { type: 'string', regex: '-?\\d+(\\.\\d+)?(: .*)?' } as const;
  const form: FormDefinition = {};
  let order = 1;
  for (const { fields } of ratingFields(config.reviewRatingName)) {
    fields.forEach((field, i) => {
      form[field] ??= { order: order++, description: `Rating: a number, optionally followed by ": " and its meaning`, value: { param: { ...rating, ...(i > 0 ? { optional: true } : {}) } } };
    });
  }
  form[config.reviewConfidenceName] ??= { order: order++, description: 'Confidence in this review', value: { param: rating } };
  form.review = { order: order++, description: 'The review. Markdown is allowed.', value: { param: { type: 'string', maxLength: 200000, input: 'textarea', markdown: true, optional: true } } };
  return form;
}

/** The decision form: the decision among the configured choices, and a comment. */
export function decisionForm(config: AuthorConsoleConfig): FormDefinition {
  return {
    [decisionField(config)]: {
      order: 1,
      description: 'The decision on this submission',
      value: { param: { type: 'string', input: 'radio', enum: ['Accept (Oral)', 'Accept (Poster)', 'Reject'] } },
    },
    comment: { order: 2, value: { param: { type: 'string', maxLength: 5000, input: 'textarea', markdown: true, optional: true } } },
  };
}
