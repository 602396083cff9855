/**
 * A refused form in plain words, in the form's own field order, each error tied to its input.
 *
 * The procedure decides (the page always calls it); this only words its answer. When the
 * procedure refused the input's shape (its schema), the page reads the same input against the
 * same shared schema and words each issue by its path and its code (`too_small`, `too_big`,
 * `invalid_format`, a missing field), never by the schema library's text ("Too small: expected
 * string to have >=1 characters"). Any other refusal is the service's own, already in plain words
 * (a common password, a wrong code), and is tied to the field its `details.path` names.
 * One error per field; errors that name no field come first, then the fields in the form's order.
 */
import type { Request } from 'express';
import type { z } from 'zod';
import { refusalOf, type FieldError } from './render.ts';

/** One input of a form, in the order the form shows them. */
export interface FormField {
  /** The input's id (the summary links to `#id`). */
  id: string;
  /** The API paths it answers for (`fullname`, `name/first`). */
  paths: string[];
  /** What to type, after "Enter": "your full name". */
  what: string;
  /** The field as the subject of a sentence: "The full name". */
  name: string;
  /** Words for an issue code, where the general ones would not do. */
  words?: Partial<Record<z.core.$ZodIssue['code'] | 'missing', string>>;
}

const EMAIL_WORDS = 'Enter an email address like name@example.org';

/** The words for one schema issue of a field. */
export function issueWords(issue: z.core.$ZodIssue, field: FormField, missing: boolean): string {
  if (missing) return field.words?.missing ?? `Enter ${field.what}`;
  const own = field.words?.[issue.code];
  if (own) return own;
  switch (issue.code) {
    case 'too_small':
      return Number(issue.minimum) <= 1 ? `Enter ${field.what}` : `${field.name} must be at least ${issue.minimum} characters`;
    case 'too_big':
      return `${field.name} must be at most ${issue.maximum} characters`;
    case 'invalid_format':
      return issue.format === 'email' ? EMAIL_WORDS : `Check ${field.what}: it is not in the expected form`;
    case 'invalid_type':
      return `Enter ${field.what}`;
    default:
      return `Check ${field.what}`;
  }
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** Errors sorted as the form shows its fields (those of no field first), one per field. */
export function inFieldOrder(errors: FieldError[], fields: readonly Pick<FormField, 'id'>[]): FieldError[] {
  const order = (e: FieldError) => (e.field === '' ? -1 : fields.findIndex((f) => f.id === e.field) === -1 ? fields.length : fields.findIndex((f) => f.id === e.field));
  const seen = new Set<string>();
  return errors
    .map((e, i) => ({ e, i }))
    .sort((a, b) => order(a.e) - order(b.e) || a.i - b.i)
    .map(({ e }) => e)
    .filter((e) => (e.field === '' ? true : seen.has(e.field) ? false : (seen.add(e.field), true)));
}

/**
 * The refusal of a form's procedure as the page shows it (see the header): `schema` and `input`
 * are what the page sent to the procedure, `fields` the form's inputs in order.
 */
export function formRefusal(req: Request, error: unknown, form: { fields: readonly FormField[]; schema?: z.ZodType; input?: unknown }): { status: number; errors: FieldError[] } {
  const { fields } = form;
  const byPath = (at: string) => fields.find((f) => f.paths.includes(at))?.id ?? '';
  const refusal = refusalOf(req, error, byPath);
  if (refusal.status >= 500 || !form.schema || form.input === undefined) return { status: refusal.status, errors: inFieldOrder(refusal.errors, fields) };
  const parsed = form.schema.safeParse(form.input);
  if (parsed.success) return { status: refusal.status, errors: inFieldOrder(refusal.errors, fields) };
  const errors = parsed.error.issues.map((issue) => {
    const at = issue.path.map(String).join('/');
    const field = fields.find((f) => f.paths.includes(at));
    if (!field) return { field: '', message: refusal.errors.find((e) => e.field === '')?.message ?? 'Please check the form' };
    // A field left empty is missing, whatever the schema says of its form ("Enter your email address").
    const value = valueAt(form.input, issue.path as PropertyKey[]);
    return { field: field.id, message: issueWords(issue, field, value === undefined || value === '') };
  });
  return { status: refusal.status, errors: inFieldOrder(errors, fields) };
}

/** The fields every account form shares, worded once. */
export const FIELDS = {
  fullname: { id: 'fullname', paths: ['fullname'], what: 'your full name', name: 'The full name' },
  email: { id: 'email', paths: ['email'], what: 'your email address', name: 'The email address' },
  /** An email or a tilde id, as the sign-in and reset forms take it (`id` in the API). */
  accountId: { id: 'email', paths: ['id', 'email'], what: 'your email address or profile id', name: 'The email address or profile id' },
  newPassword: { id: 'password', paths: ['password'], what: 'a password', name: 'The password' },
  password: { id: 'password', paths: ['password'], what: 'your password', name: 'The password' },
  token: { id: 'token', paths: ['token'], what: 'the verification answer', name: 'The verification answer' },
} satisfies Record<string, FormField>;
