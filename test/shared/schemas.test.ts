import { describe, expect, it } from 'vitest';
import {
  Activatable,
  AuthorConsoleConfig,
  defaultEthicsReviewForm,
  defaultRegistrationForm,
  defaultSubmissionForm,
  ErrorBody,
  FormDefinition,
  Group,
  Impersonator,
  issuesToErrors,
  ModerateProfileInput,
  Name,
  Profile,
  ProfileContent,
  ProfileReference,
  ProfileState,
  Resettable,
  SimplifiedProfile,
} from '../../shared/index.ts';

const simplified = { id: '~A_B1', fullname: 'A B', emails: [], usernames: ['~A_B1'], preferredId: '~A_B1', state: 'Active', tokenVersion: 0 };

function errorsOf(schema: { safeParse(v: unknown): { success: boolean; error?: { issues: never[] } } }, value: unknown) {
  const result = schema.safeParse(value);
  return result.success ? [] : issuesToErrors(result.error?.issues ?? [], value);
}

describe('closed objects reject unknown keys', () => {
  const cases: Array<[string, { safeParse(v: unknown): { success: boolean } }, Record<string, unknown>]> = [
    ['ProfileContent', ProfileContent, {}],
    ['Name', Name, {}],
    ['SimplifiedProfile', SimplifiedProfile, simplified],
    ['Profile', Profile, { id: '~A_B1', invitation: 'i', content: {}, readers: [], writers: [], signatures: [] }],
    ['ProfileReference', ProfileReference, { signatures: ['~A_B1'] }],
    ['Group', Group, { id: 'g' }],
    ['Activatable', Activatable, {}],
    ['Resettable', Resettable, {}],
    ['ErrorBody', ErrorBody, { status: 400, name: 'ValidationError', message: 'm' }],
    ['ModerateProfileInput', ModerateProfileInput, { id: '~A_B1', decision: 'accept' }],
    ['Impersonator', Impersonator, { id: 'x' }],
  ];
  it.each(cases)('%s', (_name, schema, valid) => {
    expect(schema.safeParse(valid).success).toBe(true);
    const errors = errorsOf(schema as never, { ...valid, surprise: 1 });
    expect(errors).toEqual([
      { status: 400, name: 'AdditionalPropertiesError', message: 'The property surprise must NOT be present', details: { path: 'surprise' } },
    ]);
  });

  it('names a nested unknown key by its slash path', () => {
    const errors = errorsOf(ProfileContent as never, { history: [{ position: 'P', institution: { name: 'n', domain: 'd', x: 1 }, start: 2000 }] });
    expect(errors.map((e) => e.details?.path)).toEqual(['history/0/institution/x']);
  });

  it('tells a missing required property from a wrong one', () => {
    const errors = errorsOf(ModerateProfileInput as never, { decision: 'promote' });
    expect(errors).toEqual([
      { status: 400, name: 'MissingRequiredError', message: 'The property id is required', details: { path: 'id' } },
      expect.objectContaining({ name: 'ValidationError', details: { path: 'decision' } }),
    ]);
  });
});

describe('Impersonator', () => {
  it('allows one nested impersonator and not two', () => {
    const leaf = { id: 'b', isSuperUser: true, profile: simplified };
    expect(Impersonator.safeParse({ id: 'a', impersonator: leaf }).success).toBe(true);
    const errors = errorsOf(Impersonator as never, { id: 'a', impersonator: { ...leaf, impersonator: { id: 'c' } } });
    expect(errors.map((e) => [e.name, e.details?.path])).toEqual([['AdditionalPropertiesError', 'impersonator/impersonator']]);
  });
});

describe('ProfileReference metaContent', () => {
  const ref = (metaContent: unknown) => ({ signatures: ['~A_B1'], metaContent });

  it('single-valued keys need at least one of values, weights, signatures, each with exactly one item', () => {
    expect(ProfileReference.safeParse(ref({ homepage: { values: ['https://a.org'] } })).success).toBe(true);
    expect(ProfileReference.safeParse(ref({ homepage: { weights: [1], signatures: ['~A_B1'] } })).success).toBe(true);
    expect(ProfileReference.safeParse(ref({ homepage: {} })).success).toBe(false);
    expect(ProfileReference.safeParse(ref({ homepage: { values: ['a', 'b'] } })).success).toBe(false);
    expect(ProfileReference.safeParse(ref({ homepage: { values: [''] } })).success).toBe(false);
    expect(ProfileReference.safeParse(ref({ yearOfBirth: { values: [1990] } })).success).toBe(true);
    expect(ProfileReference.safeParse(ref({ yearOfBirth: { values: ['1990'] } })).success).toBe(false);
  });

  it('names need first and last, or fullname', () => {
    expect(ProfileReference.safeParse(ref({ names: { values: [{ first: 'A', last: 'B' }], weights: [1] } })).success).toBe(true);
    expect(ProfileReference.safeParse(ref({ names: { values: [{ fullname: 'A B' }], weights: [1] } })).success).toBe(true);
    expect(ProfileReference.safeParse(ref({ names: { values: [{ first: 'A' }], weights: [1] } })).success).toBe(false);
  });

  it('emails need at least one value; list forms need signatures on each entry', () => {
    expect(ProfileReference.safeParse(ref({ emails: { values: [], weights: [] } })).success).toBe(false);
    expect(ProfileReference.safeParse(ref({ emails: { values: ['a@b.org'], weights: [1] } })).success).toBe(true);
    expect(ProfileReference.safeParse(ref({ emails: [{ signatures: ['~A_B1'], value: 'a@b.org' }] })).success).toBe(true);
    expect(ProfileReference.safeParse(ref({ emails: [{ signatures: [] }] })).success).toBe(false);
    expect(ProfileReference.safeParse(ref({ emails: [] })).success).toBe(false);
  });

  it('relations require relation and name and may have null readers; expertise requires keywords', () => {
    expect(ProfileReference.safeParse(ref({ relations: { values: [{ relation: 'Advisor', name: 'X', readers: null }], weights: [1] } })).success).toBe(true);
    expect(ProfileReference.safeParse(ref({ relations: { values: [{ name: 'X' }], weights: [1] } })).success).toBe(false);
    expect(ProfileReference.safeParse(ref({ expertise: { values: [{ start: 2000 }], weights: [1] } })).success).toBe(false);
  });

  it('accepts and ignores dobTimestamp, and requires signatures', () => {
    expect(ProfileReference.safeParse({ signatures: ['~A_B1'], dobTimestamp: 'anything' }).success).toBe(true);
    expect(ProfileReference.safeParse({}).success).toBe(false);
    expect(ProfileReference.safeParse({ signatures: [] }).success).toBe(false);
  });
});

describe('Group', () => {
  it('content entries allow delete only as true', () => {
    expect(Group.safeParse({ id: 'g', content: { title: { value: 'x', order: 1, delete: true } } }).success).toBe(true);
    expect(Group.safeParse({ id: 'g', content: { title: { delete: false } } }).success).toBe(false);
    expect(Group.safeParse({ id: 'g', content: { title: { order: 0 } } }).success).toBe(false);
    expect(Group.safeParse({ id: 'g', invitations: [] }).success).toBe(false);
    expect(Group.safeParse({ id: 'g', details: { writable: true, other: 1 } }).success).toBe(false);
  });
});

describe('ProfileState', () => {
  it('has the nine states of the spec', () => {
    expect(ProfileState.options).toEqual([
      'Active', 'Active Institutional', 'Active Automatic', 'Inactive', 'Blocked', 'Rejected', 'Needs Moderation', 'Merged', 'Limited',
    ]);
  });
});

describe('AuthorConsoleConfig', () => {
  const config = {
    header: {},
    apiVersion: 2,
    venueId: 'Conf.org/2027',
    submissionId: 'Conf.org/2027/-/Submission',
    authorSubmissionField: 'content.authorids',
    officialReviewName: 'Official_Review',
    reviewRatingName: ['rating', { overall: ['overall_rating', 'rating'] }],
    reviewConfidenceName: 'confidence',
    authorName: 'Authors',
    submissionName: 'Submission',
  };

  it('applies the defaults of the spec by parsing', () => {
    const parsed = AuthorConsoleConfig.parse(config);
    expect(parsed.decisionName).toBe('Decision');
    expect(parsed.showAuthorProfileStatus).toBe(true);
    expect(AuthorConsoleConfig.parse({ ...config, showAuthorProfileStatus: false }).showAuthorProfileStatus).toBe(false);
  });

  it('accepts blindSubmissionId for apiVersion 1 only', () => {
    expect(AuthorConsoleConfig.safeParse({ ...config, apiVersion: 1, blindSubmissionId: 'X' }).success).toBe(true);
    const errors = errorsOf(AuthorConsoleConfig as never, { ...config, blindSubmissionId: 'X' });
    expect(errors.map((e) => e.details?.path)).toEqual(['blindSubmissionId']);
  });

  it('rejects an apiVersion other than 1 or 2, and a misspelt key', () => {
    expect(AuthorConsoleConfig.safeParse({ ...config, apiVersion: 3 }).success).toBe(false);
    expect(errorsOf(AuthorConsoleConfig as never, { ...config, decisonName: 'D' }).map((e) => e.name)).toEqual(['AdditionalPropertiesError']);
  });
});

describe('default forms', () => {
  it.each([
    ['submission', defaultSubmissionForm],
    ['ethics review', defaultEthicsReviewForm],
    ['registration', defaultRegistrationForm],
  ])('the %s form is described by FormDefinition', (_name, form) => {
    expect(FormDefinition.parse(form)).toEqual(form);
  });

  it('keeps the orders and types of the spec', () => {
    const summary = (form: Record<string, { order: number; value: { param: { type: string } } }>) =>
      Object.entries(form).map(([name, field]) => [name, field.order, field.value.param.type]);
    expect(summary(defaultSubmissionForm)).toEqual([
      ['title', 1, 'string'], ['authors', 2, 'string[]'], ['authorids', 3, 'group[]'], ['keywords', 6, 'string'],
      ['TLDR', 7, 'string'], ['abstract', 8, 'string'], ['pdf', 9, 'file'],
    ]);
    expect(summary(defaultEthicsReviewForm)).toEqual([['recommendation', 1, 'string'], ['ethics_review', 2, 'string']]);
    expect(summary(defaultRegistrationForm)).toEqual([['profile_confirmed', 1, 'string'], ['expertise_confirmed', 2, 'string']]);
  });

  it('the author-id rule takes a tilde id or comma-separated email-shaped ids', () => {
    const rule = new RegExp(`^(?:${defaultSubmissionForm.authorids.value.param.regex})$`);
    expect(rule.test('~Ada_Lovelace1')).toBe(true);
    expect(rule.test('ada@example.org')).toBe(true);
    expect(rule.test('ada@example.org,alan@example.org')).toBe(true);
    expect(rule.test('Ada Lovelace')).toBe(false);
  });

  it('the author-name rule refuses semicolons and newlines', () => {
    const rule = new RegExp(`^(?:${defaultSubmissionForm.authors.value.param.regex})$`);
    expect(rule.test('Ada Lovelace')).toBe(true);
    expect(rule.test('Ada; Lovelace')).toBe(false);
    expect(rule.test('Ada\nLovelace')).toBe(false);
  });
});
