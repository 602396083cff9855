import { z } from 'zod';

/** The param keys a form field may use (version 2 format, `value.param`). */
export const FieldParam = z.strictObject({
  type: z.enum(['string', 'string[]', 'group[]', 'file']),
  regex: z.string().optional(),
  hidden: z.boolean().optional(),
  optional: z.boolean().optional(),
  deletable: z.boolean().optional(),
  fieldName: z.string().optional(),
  minLength: z.int().min(0).optional(),
  maxLength: z.int().min(0).optional(),
  input: z.enum(['textarea', 'radio', 'checkbox']).optional(),
  markdown: z.boolean().optional(),
  extensions: z.array(z.string().min(1)).min(1).optional(),
  /** In megabytes (10^6 bytes); fractions are allowed. The spec leaves the unit open. */
  maxSize: z.number().positive().optional(),
  enum: z.array(z.union([z.string(), z.number()])).min(1).optional(),
});
export type FieldParam = z.infer<typeof FieldParam>;

export const FormField = z.strictObject({
  order: z.int().min(1),
  description: z.string().optional(),
  value: z.strictObject({ param: FieldParam }),
});
export type FormField = z.infer<typeof FormField>;

/** A form: an object keyed by field name. */
export const FormDefinition = z.record(z.string().regex(/^[A-Za-z0-9_]+$/), FormField);
export type FormDefinition = z.infer<typeof FormDefinition>;

/** A name with no comma, semicolon or newline; a list of such names joined by commas. */
const NAMES_REGEX = '[^;,\\n]+(,[^,\\n]+)*';
/** A tilde profile id, or one or more e-mail-shaped ids separated by commas. */
const AUTHOR_ID_REGEX =
  '^~\\S+$|([a-z0-9_\\-\\.]{1,}@[a-z0-9_\\-\\.]{2,}\\.[a-z]{2,},){0,}([a-z0-9_\\-\\.]{1,}@[a-z0-9_\\-\\.]{2,}\\.[a-z]{2,})';

export const defaultSubmissionForm = {
  title: {
    order: 1,
    description: 'Title of paper. Add TeX formulas using the following formats: $In-line Formula$ or $$Block Formula$$.',
    value: { param: { type: 'string', regex: '.{1,250}' } },
  },
  authors: {
    order: 2,
    description: 'Comma separated list of author names.',
    value: { param: { type: 'string[]', regex: NAMES_REGEX, hidden: true } },
  },
  authorids: {
    order: 3,
    description:
      'Search author profile by first, middle and last name or email address. If the profile is not found, you can add the author by completing first, middle, and last names as well as author email address.',
    value: { param: { type: 'group[]', regex: AUTHOR_ID_REGEX } },
  },
  keywords: {
    order: 6,
    description: 'Comma separated list of keywords.',
    value: { param: { type: 'string', regex: `(^$)|${NAMES_REGEX}`, optional: true, deletable: true } },
  },
  TLDR: {
    order: 7,
    description: '"Too Long; Didn\'t Read": a short sentence describing your paper',
    value: { param: { type: 'string', fieldName: 'TL;DR', maxLength: 250, optional: true, deletable: true } },
  },
  abstract: {
    order: 8,
    description: 'Abstract of paper. Add TeX formulas using the following formats: $In-line Formula$ or $$Block Formula$$.',
    value: { param: { type: 'string', minLength: 1, maxLength: 5000, input: 'textarea', markdown: true } },
  },
  pdf: {
    order: 9,
    description: 'Upload a PDF file that ends with .pdf.',
    value: { param: { type: 'file', extensions: ['pdf'], maxSize: 50 } },
  },
} as const satisfies FormDefinition;

export const defaultEthicsReviewForm = {
  recommendation: {
    order: 1,
    value: {
      param: {
        type: 'string',
        input: 'radio',
        enum: [
          '1: No serious ethical issues',
          '2: Serious ethical issues that need to be addressed in the final version',
          '3: Paper should be rejected due to ethical issues',
        ],
      },
    },
  },
  ethics_review: {
    order: 2,
    description:
      'Please explain your recommendation and give the justification for it. Markdown and LaTeX ($In-line Formula$ or $$Block Formula$$) are allowed.',
    value: {
      param: { type: 'string', maxLength: 200000, markdown: true, input: 'textarea', optional: true, deletable: true },
    },
  },
} as const satisfies FormDefinition;

export const defaultRegistrationForm = {
  profile_confirmed: {
    order: 1,
    description:
      'Please confirm that your profile is up to date (emails, work history and relations), so that conflicts of interest can be found.',
    value: { param: { type: 'string', enum: ['Yes'], input: 'checkbox' } },
  },
  expertise_confirmed: {
    order: 2,
    description:
      'Please confirm that your latest papers are visible in the expertise selection, which is used to compute affinity scores.',
    value: { param: { type: 'string', enum: ['Yes'], input: 'checkbox' } },
  },
} as const satisfies FormDefinition;
