import { describe, expect, it } from 'vitest';
import {
  defaultEthicsReviewForm,
  defaultRegistrationForm,
  defaultSubmissionForm,
  validateContent,
  type FormDefinition,
} from '../../shared/index.ts';

const PDF = `/pdf/${'a'.repeat(40)}.pdf`;
const submission = (overrides: Record<string, unknown> = {}) => ({
  title: { value: 'A study of things' },
  authors: { value: ['Ada Lovelace', 'Alan Turing'] },
  authorids: { value: ['~Ada_Lovelace1', 'alan@example.org'] },
  abstract: { value: 'We study things.' },
  pdf: { value: PDF },
  ...overrides,
});

/** The problems' paths and names, for compact assertions. */
const problems = (form: FormDefinition, content: unknown) => validateContent(form, content).map((p) => [p.details?.path, p.name]);

describe('the default submission form', () => {
  it('accepts a complete submission', () => {
    expect(validateContent(defaultSubmissionForm, submission())).toEqual([]);
  });

  it('title: 1 to 250 characters (characters, not UTF-16 units)', () => {
    expect(problems(defaultSubmissionForm, submission({ title: { value: 't'.repeat(250) } }))).toEqual([]);
    expect(problems(defaultSubmissionForm, submission({ title: { value: '😀'.repeat(250) } }))).toEqual([]);
    expect(problems(defaultSubmissionForm, submission({ title: { value: 't'.repeat(251) } }))).toEqual([['content/title/value', 'ValidationError']]);
    expect(problems(defaultSubmissionForm, submission({ title: { value: 't' } }))).toEqual([]);
    expect(problems(defaultSubmissionForm, submission({ title: { value: '' } }))).toEqual([['content/title/value', 'ValidationError']]);
  });

  it("authors: the platform's pattern, comma-separated names, the first with no semicolon, none with a newline", () => {
    expect(problems(defaultSubmissionForm, submission({ authors: { value: ['Jean-Luc Picard', 'Doe, Jane', 'A,B;C'] } }))).toEqual([]);
    expect(problems(defaultSubmissionForm, submission({ authors: { value: ['Ada; Lovelace', 'Ok Name', 'Line\nBreak', ',Leading'] } }))).toEqual([
      ['content/authors/value/0', 'ValidationError'],
      ['content/authors/value/2', 'ValidationError'],
      ['content/authors/value/3', 'ValidationError'],
    ]);
    expect(problems(defaultSubmissionForm, submission({ authors: { value: 'Ada Lovelace' } }))).toEqual([['content/authors/value', 'ValidationError']]);
  });

  it('authorids: a tilde id, or e-mail-shaped ids separated by commas', () => {
    expect(problems(defaultSubmissionForm, submission({ authorids: { value: ['~A_B1', 'ada@uni.org,alan@lab.org'] } }))).toEqual([]);
    expect(problems(defaultSubmissionForm, submission({ authorids: { value: ['Ada Lovelace', '~A B1'] } }))).toEqual([
      ['content/authorids/value/0', 'ValidationError'],
      ['content/authorids/value/1', 'ValidationError'],
    ]);
    expect(problems(defaultSubmissionForm, submission({ authorids: { value: [] } }))).toEqual([['content/authorids/value', 'ValidationError']]);
  });

  it('keywords: empty, or comma-separated items; optional and deletable', () => {
    expect(problems(defaultSubmissionForm, submission({ keywords: { value: '' } }))).toEqual([]);
    expect(problems(defaultSubmissionForm, submission({ keywords: { value: 'graphs,learning' } }))).toEqual([]);
    expect(problems(defaultSubmissionForm, submission({ keywords: { value: 'graphs;learning' } }))).toEqual([['content/keywords/value', 'ValidationError']]);
    expect(problems(defaultSubmissionForm, submission({ keywords: { value: 'graphs,learning;theory' } }))).toEqual([]);
    expect(problems(defaultSubmissionForm, submission({ keywords: { value: 'graphs,\nlearning' } }))).toEqual([['content/keywords/value', 'ValidationError']]);
    expect(problems(defaultSubmissionForm, submission({ keywords: { value: 'graphs,,learning' } }))).toEqual([['content/keywords/value', 'ValidationError']]);
    expect(problems(defaultSubmissionForm, submission({ keywords: { value: { delete: true } } }))).toEqual([]);
  });

  it('TL;DR: at most 250 characters, named TL;DR in messages; deletable', () => {
    expect(problems(defaultSubmissionForm, submission({ TLDR: { value: 'x'.repeat(250) } }))).toEqual([]);
    const over = validateContent(defaultSubmissionForm, submission({ TLDR: { value: 'x'.repeat(251) } }));
    expect(over).toEqual([{ status: 400, name: 'ValidationError', message: 'TL;DR must be at most 250 characters', details: { path: 'content/TLDR/value' } }]);
    expect(problems(defaultSubmissionForm, submission({ TLDR: { value: { delete: true } } }))).toEqual([]);
  });

  it('abstract: 1 to 5000 characters (counted as characters, not UTF-16 units)', () => {
    expect(problems(defaultSubmissionForm, submission({ abstract: { value: 'a'.repeat(5000) } }))).toEqual([]);
    expect(problems(defaultSubmissionForm, submission({ abstract: { value: '😀'.repeat(5000) } }))).toEqual([]);
    expect(problems(defaultSubmissionForm, submission({ abstract: { value: 'a'.repeat(5001) } }))).toEqual([['content/abstract/value', 'ValidationError']]);
    expect(problems(defaultSubmissionForm, submission({ abstract: { value: '' } }))).toEqual([['content/abstract/value', 'ValidationError']]);
  });

  it('pdf: the URL of an uploaded file with extension pdf', () => {
    expect(problems(defaultSubmissionForm, submission({ pdf: { value: `/attachment/${'b'.repeat(40)}.zip` } }))).toEqual([['content/pdf/value', 'ValidationError']]);
    expect(problems(defaultSubmissionForm, submission({ pdf: { value: 'https://elsewhere.example/paper.pdf' } }))).toEqual([['content/pdf/value', 'ValidationError']]);
    expect(defaultSubmissionForm.pdf.value.param.maxSize).toBe(50);
  });

  it('required fields cannot be deleted; unknown fields and missing fields are all reported at once', () => {
    expect(problems(defaultSubmissionForm, submission({ title: { value: { delete: true } } }))).toEqual([['content/title/value', 'ValidationError']]);
    const { abstract: _dropped, ...withoutAbstract } = submission({ title: { value: 't'.repeat(251) }, venue: { value: 'X' } });
    expect(problems(defaultSubmissionForm, withoutAbstract)).toEqual([
      ['content/venue', 'AdditionalPropertiesError'],
      ['content/title/value', 'ValidationError'],
      ['content/abstract/value', 'MissingRequiredError'],
    ]);
  });

  it('an entry is {value, readers?} and nothing else', () => {
    expect(problems(defaultSubmissionForm, submission({ title: { value: 'T', readers: ['everyone'] } }))).toEqual([]);
    expect(problems(defaultSubmissionForm, submission({ title: { value: 'T', colour: 'red' } }))).toEqual([['content/title/colour', 'AdditionalPropertiesError']]);
    expect(problems(defaultSubmissionForm, submission({ title: 'T' }))).toEqual([['content/title', 'ValidationError']]);
  });
});

describe('the default ethics review form', () => {
  const review = (overrides: Record<string, unknown> = {}) => ({ recommendation: { value: '1: No serious ethical issues' }, ...overrides });

  it('recommendation: one of the enum (radio)', () => {
    expect(problems(defaultEthicsReviewForm, review())).toEqual([]);
    expect(problems(defaultEthicsReviewForm, review({ recommendation: { value: '4: Unsure' } }))).toEqual([['content/recommendation/value', 'ValidationError']]);
    expect(problems(defaultEthicsReviewForm, {})).toEqual([['content/recommendation/value', 'MissingRequiredError']]);
  });

  it('ethics_review: at most 200000 characters, optional and deletable', () => {
    expect(problems(defaultEthicsReviewForm, review({ ethics_review: { value: 'x'.repeat(200000) } }))).toEqual([]);
    expect(problems(defaultEthicsReviewForm, review({ ethics_review: { value: 'x'.repeat(200001) } }))).toEqual([['content/ethics_review/value', 'ValidationError']]);
    expect(problems(defaultEthicsReviewForm, review({ ethics_review: { value: { delete: true } } }))).toEqual([]);
  });
});

describe('the default registration form', () => {
  const both = { profile_confirmed: { value: 'Yes' }, expertise_confirmed: { value: 'Yes' } };

  it('both confirmations are required and must be Yes (checkbox: a subset of the enum)', () => {
    expect(problems(defaultRegistrationForm, both)).toEqual([]);
    expect(problems(defaultRegistrationForm, { ...both, profile_confirmed: { value: ['Yes'] } })).toEqual([]);
    expect(problems(defaultRegistrationForm, { ...both, profile_confirmed: { value: 'No' } })).toEqual([['content/profile_confirmed/value', 'ValidationError']]);
    expect(problems(defaultRegistrationForm, { ...both, expertise_confirmed: { value: ['Yes', 'No'] } })).toEqual([['content/expertise_confirmed/value/1', 'ValidationError']]);
    expect(problems(defaultRegistrationForm, { profile_confirmed: { value: 'Yes' } })).toEqual([['content/expertise_confirmed/value', 'MissingRequiredError']]);
  });
});

describe('the remaining param keys', () => {
  const form: FormDefinition = {
    tags: { order: 1, value: { param: { type: 'string[]', enum: ['a', 'b', 'c'], input: 'checkbox' } } },
    code: { order: 2, value: { param: { type: 'file', extensions: ['zip', 'tar'], maxSize: 0.5, optional: true } } },
    short: { order: 3, value: { param: { type: 'string', minLength: 3, optional: true, hidden: true, markdown: false } } },
  };

  it('checkbox enums take a subset; file extensions are checked; minLength above one', () => {
    expect(problems(form, { tags: { value: ['a', 'c'] } })).toEqual([]);
    expect(problems(form, { tags: { value: ['a', 'z'] } })).toEqual([['content/tags/value/1', 'ValidationError']]);
    expect(problems(form, { tags: { value: ['a'] }, code: { value: `/attachment/${'c'.repeat(40)}.zip` } })).toEqual([]);
    expect(problems(form, { tags: { value: ['a'] }, code: { value: `/pdf/${'c'.repeat(40)}.pdf` } })).toEqual([['content/code/value', 'ValidationError']]);
    expect(problems(form, { tags: { value: ['a'] }, short: { value: 'ab' } })).toEqual([['content/short/value', 'ValidationError']]);
    expect(problems(form, { tags: { value: ['a'] }, short: { value: { delete: true } } })).toEqual([['content/short/value', 'ValidationError']]);
  });
});
