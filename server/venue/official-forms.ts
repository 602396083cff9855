import { FieldName, invalidAt, type AuthorConsoleConfig, type ErrorItem, type FormDefinition } from '../../shared/index.ts';

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

/** The review form's field for the review's text, and the decision form's for its comment. */
const REVIEW_TEXT = 'review';
const DECISION_COMMENT = 'comment';

/**
 * What in a config would make forms it cannot hold: no rating, an object of ratings that maps
 * none or several, a rating or confidence field whose name is not a field name (`FieldName`),
 * or that takes the place of another field of the review form
 * (the review's text; the confidence among the ratings), and a decision field named as the
 * decision's comment. Each is refused when the venue is made, not found when its forms are read.
 */
export function formNameProblems(config: AuthorConsoleConfig): ErrorItem[] {
  const problems: ErrorItem[] = [];
  const refuse = (path: string, message: string) => problems.push(invalidAt(path, `${path}: ${message}`));
  const entries = typeof config.reviewRatingName === 'string' ? [config.reviewRatingName] : config.reviewRatingName;
  if (entries.length === 0) refuse('reviewRatingName', 'name one rating field at least');
  // An object maps one displayed rating (a `__proto__` key, which parsing drops, leaves none).
  if (entries.some((entry) => typeof entry !== 'string' && Object.keys(entry).length !== 1)) refuse('reviewRatingName', 'each object maps one displayed rating to its fields');
  const ratings = new Set(ratingFields(config.reviewRatingName).flatMap(({ fields }) => fields));
  for (const field of ratings) {
    const problem = fieldNameProblem(field);
    if (problem) refuse('reviewRatingName', problem);
  }
  const confidence = config.reviewConfidenceName;
  const problem = fieldNameProblem(confidence) ?? (ratings.has(confidence) ? `${confidence} is one of the rating fields` : null);
  if (problem) refuse('reviewConfidenceName', problem);
  if (decisionField(config) === DECISION_COMMENT) refuse('decisionName', `its field, ${DECISION_COMMENT}, is the decision's comment`);
  return problems;
}

/** Why a rating's or the confidence's name cannot be a field of the review form, or null. */
function fieldNameProblem(name: string): string | null {
  const refused = FieldName.safeParse(name).error?.issues[0];
  if (refused) return `${JSON.stringify(name.slice(0, 40))} is not a field name: ${refused.message}`;
  return name === REVIEW_TEXT ? `${REVIEW_TEXT} is the field of the review's text` : null;
}

/** The official review form: one field per configured rating field, the confidence, the review text. */
export function reviewForm(config: AuthorConsoleConfig): FormDefinition {
  const rating = { type: 'string', regex: '-?\\d+(\\.\\d+)?(: .*)?' } as const;
  const form: FormDefinition = {};
  let order = 1;
  for (const { fields } of ratingFields(config.reviewRatingName)) {
    fields.forEach((field, i) => {
      // A field named twice (in two entries' fallbacks) is one field; `hasOwn`, as `constructor` is a field name too.
      if (!Object.hasOwn(form, field)) form[field] = { order: order++, description: `Rating: a number, optionally followed by ": " and its meaning`, value: { param: { ...rating, ...(i > 0 ? { optional: true } : {}) } } };
    });
  }
  form[config.reviewConfidenceName] = { order: order++, description: 'Confidence in this review', value: { param: rating } };
  form[REVIEW_TEXT] = { order: order++, description: 'The review. Markdown is allowed.', value: { param: { type: 'string', maxLength: 200000, input: 'textarea', markdown: true, optional: true } } };
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
    [DECISION_COMMENT]: { order: 2, value: { param: { type: 'string', maxLength: 5000, input: 'textarea', markdown: true, optional: true } } },
  };
}
