import { z } from 'zod';
import type { ErrorItem } from './errors.ts';
import { isLinearPattern, matchesWhole } from './patterns.ts';

/** The param keys a form field may use (version 2 format, `value.param`). */
export const FieldParam = z.strictObject({
  type: z.enum(['string', 'string[]', 'group[]', 'file']),
  regex: z
    .string()
    .max(1000)
    .refine(isLinearPattern, { message: 'The pattern must be a regular expression without backreferences or lookaround (it runs in linear time)' })
    .optional(),
  hidden: z.boolean().optional(),
  optional: z.boolean().optional(),
  deletable: z.boolean().optional(),
  fieldName: z.string().optional(),
  minLength: z.int().min(0).optional(),
  maxLength: z.int().min(0).optional(),
  input: z.enum(['textarea', 'radio', 'checkbox']).optional(),
  markdown: z.boolean().optional(),
  extensions: z.array(z.string().min(1)).min(1).optional(),
  /** In megabytes (2^20 bytes); fractions are allowed. The spec leaves the unit open. */
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

/** A form field's name: letters, digits and underscores; never `__proto__`, which a JavaScript object cannot hold as its own key when parsed. */
export const FieldName = z
  .string()
  .regex(/^[A-Za-z0-9_]+$/, 'A field name is letters, digits and underscores')
  .refine((name) => name !== '__proto__', 'A field name cannot be __proto__');

/** A form: an object keyed by field name. */
export const FormDefinition = z.record(FieldName, FormField).meta({ id: 'FormDefinition' });
export type FormDefinition = z.infer<typeof FormDefinition>;

/**
 * Author names: comma-separated names, the first with no semicolon, none with a newline; the real
 * platform's own pattern (openreview-py's default submission content), kept as it writes it.
 */
const AUTHOR_NAME_REGEX = '[^;,\\n]+(,[^,\\n]+)*';
/** Empty, or comma-separated items (the same pattern, as the platform writes its keywords'). */
const KEYWORDS_REGEX = '(^$)|[^;,\\n]+(,[^,\\n]+)*';
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
    value: { param: { type: 'string[]', regex: AUTHOR_NAME_REGEX, hidden: true } },
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
    value: { param: { type: 'string', regex: KEYWORDS_REGEX, optional: true, deletable: true } },
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

// ---- validating a note's content against a form ------------------------------------------------

/** A note's content: `{field: {value}}`, each entry optionally with its own readers. */
export type NoteContent = Record<string, unknown>;

/** A stored file's URL, as the attachment endpoints return it. */
const FILE_URL = /^\/(?:pdf\/[0-9a-f]{40}\.pdf|attachment\/[0-9a-f]{40}\.([A-Za-z0-9]{1,10}))$/;

/** The extension of a stored file's URL (`pdf` for `/pdf/…`), or null when it is not one. */
export function fileUrlExtension(url: string): string | null {
  const match = FILE_URL.exec(url);
  if (!match) return null;
  return match[1] ? match[1].toLowerCase() : 'pdf';
}

/** Length in characters (code points), not UTF-16 units. */
const length = (s: string) => [...s].length;

const isDelete = (value: unknown) =>
  typeof value === 'object' && value !== null && (value as { delete?: unknown }).delete === true && Object.keys(value).length === 1;

interface Problem {
  name: 'ValidationError' | 'MissingRequiredError' | 'AdditionalPropertiesError';
  path: string;
  message: string;
}

/**
 * Checks a note's `content` against a form and returns every problem at once, each with the
 * slash path of the failing value (`content/title/value`) and the error name clients know.
 * An empty list means the content is valid.
 *
 * Honoured param keys: `type`, `regex` (whole value), `optional`, `deletable` (a value
 * `{delete: true}` removes the field, only where deletable), `minLength`, `maxLength` (in
 * characters), `enum` (radio: one of; checkbox: a subset), `extensions` (of a file's URL),
 * `fieldName` (the name used in messages). `hidden`, `markdown` and `input` say how a field is
 * shown, not what it may hold; `maxSize` is checked when the file is uploaded.
 */
/**
 * A form's field, or a note's entry, by a name the request gave: its own only. `form[name]` would
 * find what every object inherits (`constructor`, `toString`), which field names may spell.
 */
export function ownField<T>(fields: Readonly<Record<string, T>>, name: string): T | undefined {
  return Object.hasOwn(fields, name) ? fields[name] : undefined;
}

/** The value a note's content holds in a field the request named (`ownField`); undefined: none. */
export function valueIn(content: Readonly<Record<string, unknown>>, field: string): unknown {
  return (ownField(content, field) as { value?: unknown } | undefined)?.value;
}

export function validateContent(form: FormDefinition, content: unknown): ErrorItem[] {
  return problemsOf(form, content).map((p) => ({ status: 400, name: p.name, message: p.message, details: { path: p.path } }));
}

function problemsOf(form: FormDefinition, content: unknown): Problem[] {
  const problems: Problem[] = [];
  if (typeof content !== 'object' || content === null || Array.isArray(content)) {
    return [{ name: 'ValidationError', path: 'content', message: 'content must be an object of fields' }];
  }
  const entries = content as NoteContent;
  for (const key of Object.keys(entries)) {
    if (!Object.hasOwn(form, key)) {
      problems.push({ name: 'AdditionalPropertiesError', path: `content/${key}`, message: `The property content/${key} must NOT be present` });
    }
  }
  for (const [field, definition] of Object.entries(form)) {
    const param = definition.value.param;
    const label = param.fieldName ?? field;
    const path = `content/${field}/value`;
    const entry = ownField(entries, field);
    if (entry === undefined) {
      if (!param.optional) problems.push({ name: 'MissingRequiredError', path, message: `The property ${path} is required` });
      continue;
    }
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      problems.push({ name: 'ValidationError', path: `content/${field}`, message: `${label} must be an object with a value` });
      continue;
    }
    for (const key of Object.keys(entry)) {
      if (key !== 'value' && key !== 'readers') {
        problems.push({ name: 'AdditionalPropertiesError', path: `content/${field}/${key}`, message: `The property content/${field}/${key} must NOT be present` });
      }
    }
    const readers = (entry as { readers?: unknown }).readers;
    if (readers !== undefined && !(Array.isArray(readers) && readers.every((r) => typeof r === 'string' && r.length > 0))) {
      problems.push({ name: 'ValidationError', path: `content/${field}/readers`, message: `The readers of ${label} must be a list of ids` });
    }
    const value = (entry as { value?: unknown }).value;
    if (value === undefined || value === null) {
      if (!param.optional) problems.push({ name: 'MissingRequiredError', path, message: `The property ${path} is required` });
      continue;
    }
    if (isDelete(value)) {
      if (!param.deletable) problems.push({ name: 'ValidationError', path, message: `${label} cannot be deleted` });
      continue;
    }
    problems.push(...checkValue(param, value, path, label));
  }
  return problems;
}

function checkValue(param: FieldParam, value: unknown, path: string, label: string): Problem[] {
  const fail = (message: string, at = path): Problem[] => [{ name: 'ValidationError', path: at, message }];
  switch (param.type) {
    case 'string': {
      if (typeof value === 'string') return checkString(param, value, path, label);
      if (param.input === 'checkbox' && Array.isArray(value)) return checkList(param, value, path, label);
      return fail(`${label} must be a string`);
    }
    case 'string[]':
    case 'group[]': {
      if (!Array.isArray(value)) return fail(`${label} must be a list of strings`);
      if (value.length === 0 && !param.optional) return fail(`${label} must have at least one item`);
      return checkList(param, value, path, label);
    }
    case 'file': {
      if (typeof value !== 'string') return fail(`${label} must be the URL of an uploaded file`);
      const extension = fileUrlExtension(value);
      if (extension === null) return fail(`${label} must be the URL of an uploaded file`);
      if (param.extensions && !param.extensions.map((e) => e.toLowerCase()).includes(extension)) {
        return fail(`${label} must be a file of type ${param.extensions.join(', ')}`);
      }
      return [];
    }
  }
}

function checkList(param: FieldParam, value: unknown[], path: string, label: string): Problem[] {
  const problems: Problem[] = [];
  value.forEach((item, i) => {
    if (typeof item !== 'string') problems.push({ name: 'ValidationError', path: `${path}/${i}`, message: `${label} must hold strings` });
    else problems.push(...checkString({ ...param, enum: undefined }, item, `${path}/${i}`, label));
  });
  if (param.enum) {
    const allowed = new Set(param.enum.map(String));
    value.forEach((item, i) => {
      if (!allowed.has(String(item))) {
        problems.push({ name: 'ValidationError', path: `${path}/${i}`, message: `${label} must be among: ${param.enum?.join(', ')}` });
      }
    });
  }
  return problems;
}

function checkString(param: FieldParam, value: string, path: string, label: string): Problem[] {
  const problems: Problem[] = [];
  const fail = (message: string) => problems.push({ name: 'ValidationError', path, message });
  if (param.minLength !== undefined && length(value) < param.minLength) {
    fail(param.minLength === 1 ? `${label} must not be empty` : `${label} must be at least ${param.minLength} characters`);
  }
  if (param.maxLength !== undefined && length(value) > param.maxLength) fail(`${label} must be at most ${param.maxLength} characters`);
  // The whole value must match (never a part of it), in linear time: see `patterns.ts`.
  if (param.regex !== undefined && !matchesWhole(param.regex, value)) fail(`${label} must match the pattern ${param.regex}`);
  if (param.enum && !param.enum.map(String).includes(value)) fail(`${label} must be one of: ${param.enum.join(', ')}`);
  return problems;
}

// ---- the rules a file for a `file` field must meet ----------------------------------------------

/** A size for people: `5 MB` (of 2^20 bytes, as `maxSize` counts), or bytes below one. */
export function formatBytes(bytes: number): string {
  const mb = bytes / (1024 * 1024);
  return mb >= 1 ? `${Number(mb.toFixed(2))} MB` : `${bytes} bytes`;
}

/** The message of a file over its limit. */
export function tooLargeMessage(maxBytes: number): string {
  return `The file is larger than the ${formatBytes(maxBytes)} allowed`;
}

/** What a field allows: its extensions (null: any) and its size limit in bytes. */
export interface FileRules {
  extensions: readonly string[] | null | undefined;
  maxBytes: number;
}

/**
 * The one statement of whether a file may go into a field, for the server (which applies it)
 * and for clients (which check before sending): the extension it is stored under — its name's,
 * which the field must allow; a name without one takes the field's only extension — or why
 * not, with the status the server answers (400 for its type, 413 for its size). `size` is
 * left out while it is not known yet.
 */
export function checkFileFor(rules: FileRules, filename: string, size?: number): { extension: string } | { status: 400 | 413; message: string } {
  const allowed = rules.extensions?.map((e) => e.toLowerCase());
  const named = /\.([A-Za-z0-9]{1,10})$/.exec(filename)?.[1]?.toLowerCase();
  const extension = named ?? (allowed?.length === 1 ? allowed[0] : undefined);
  if (!extension || (allowed && !allowed.includes(extension))) {
    return { status: 400, message: `The file must be of type ${allowed?.join(', ') ?? 'with an extension'}` };
  }
  if (size !== undefined && size > rules.maxBytes) return { status: 413, message: tooLargeMessage(rules.maxBytes) };
  return { extension };
}
