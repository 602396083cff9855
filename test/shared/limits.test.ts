/**
 * One boundary test per row of the spec's Limits table: the value at the limit is accepted,
 * one past it is rejected with a message that names the field.
 */
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  ActivatableRequest,
  AppError,
  ChunkFields,
  ConfirmEmailInput,
  defaultEthicsReviewForm,
  defaultSubmissionForm,
  Group,
  HistoryEntry,
  OIDC_CODE_SECONDS,
  OIDC_TOKEN_SECONDS,
  parseOrThrow,
  Profile,
  ProfileContent,
  ProfileReference,
  ResettableRequest,
  SecurityEventsInput,
  SimplifiedProfile,
  UploadFields,
  WebAuthnAuthQuery,
} from '../../shared/index.ts';

/** Parses and returns the Error body of the failure (or null when accepted). */
function failure(schema: z.ZodType, value: unknown) {
  try {
    parseOrThrow(schema, value);
    return null;
  } catch (error) {
    if (error instanceof AppError) return error.toBody();
    throw error;
  }
}

function expectBoundary(schema: z.ZodType, atLimit: unknown, pastLimit: unknown, field: string) {
  expect(failure(schema, atLimit)).toBeNull();
  const body = failure(schema, pastLimit);
  expect(body).not.toBeNull();
  expect(body?.status).toBe(400);
  expect(body?.details).toEqual({ path: field });
  expect(body?.message).toContain(field);
}

const institution = { name: 'MIT', domain: 'mit.edu' };
const simplified = { id: '~A_B1', fullname: 'A B', emails: [], usernames: ['~A_B1'], preferredId: '~A_B1', state: 'Active', tokenVersion: 0 };

describe('limits', () => {
  it('id in POST /activatable and POST /resettable: 1 to 254 characters', () => {
    for (const schema of [ActivatableRequest, ResettableRequest]) {
      expectBoundary(schema, { id: 'a'.repeat(254) }, { id: 'a'.repeat(255) }, 'id');
      expectBoundary(schema, { id: 'a' }, { id: '' }, 'id');
    }
  });

  it('alternate in POST /user/confirm: 1 to 254 characters', () => {
    const at = (n: number) => `${'a'.repeat(n - '@example.org'.length)}@example.org`;
    expectBoundary(ConfirmEmailInput, { alternate: at(254) }, { alternate: at(255) }, 'alternate');
    expectBoundary(ConfirmEmailInput, { alternate: 'a@b.co' }, { alternate: '' }, 'alternate');
  });

  it('pronouns: at most 50 characters', () => {
    expectBoundary(ProfileContent, { pronouns: 'x'.repeat(50) }, { pronouns: 'x'.repeat(51) }, 'pronouns');
  });

  it('history, relations and expertise years: integers 1900 to 2099', () => {
    const entry = (start: unknown) => ({ history: [{ position: 'Professor', institution, start }] });
    expectBoundary(ProfileContent, entry(1900), entry(1899), 'history/0/start');
    expectBoundary(ProfileContent, entry(2099), entry(2100), 'history/0/start');
    expectBoundary(ProfileContent, entry(2000), entry(2000.5), 'history/0/start');
    const relation = (end: unknown) => ({ relations: [{ relation: 'Coauthor', name: 'X Y', end }] });
    expectBoundary(ProfileContent, relation(2099), relation(2100), 'relations/0/end');
    const expertise = (start: unknown) => ({ expertise: [{ keywords: ['ml'], start }] });
    expectBoundary(ProfileContent, expertise(1900), expertise(1899), 'expertise/0/start');
    expect(failure(HistoryEntry, { position: 'P', institution, start: '' })).toBeNull();
    expect(failure(HistoryEntry, { position: 'P', institution, start: null })).toBeNull();
  });

  it('timestamps: 0 to 9999999999999 on profile and group fields', () => {
    expectBoundary(SimplifiedProfile, { ...simplified, termsTimestamp: 9_999_999_999_999 }, { ...simplified, termsTimestamp: 10_000_000_000_000 }, 'termsTimestamp');
    expectBoundary(SimplifiedProfile, { ...simplified, termsTimestamp: 0 }, { ...simplified, termsTimestamp: -1 }, 'termsTimestamp');
    expectBoundary(Group, { id: 'g', tcdate: 9_999_999_999_999 }, { id: 'g', tcdate: 10_000_000_000_000 }, 'tcdate');
    const profile = { id: '~A_B1', invitation: 'i', content: {}, readers: [], writers: [], signatures: [] };
    for (const field of ['tcdate', 'tmdate', 'ddate', 'termsTimestamp', 'dobTimestamp', 'lastLogIn']) {
      expectBoundary(Profile, { ...profile, [field]: 9_999_999_999_999 }, { ...profile, [field]: 10_000_000_000_000 }, field);
      expectBoundary(Profile, { ...profile, [field]: 0 }, { ...profile, [field]: -1 }, field);
    }
    for (const field of ['tcdate', 'tmdate', 'ddate']) {
      expectBoundary(ProfileReference, { signatures: ['~A_B1'], [field]: 9_999_999_999_999 }, { signatures: ['~A_B1'], [field]: 10_000_000_000_000 }, field);
    }
    expectBoundary(Group, { id: 'g', cdate: 0 }, { id: 'g', cdate: -1 }, 'cdate');
  });

  it('attachment name: 1 to 80 characters', () => {
    expectBoundary(UploadFields, { name: 'a'.repeat(80), invitationId: 'I' }, { name: 'a'.repeat(81), invitationId: 'I' }, 'name');
    expectBoundary(UploadFields, { name: 'a', invitationId: 'I' }, { name: '', invitationId: 'I' }, 'name');
    expectBoundary(UploadFields, { name: 'a-b_c9', invitationId: 'I' }, { name: '-pdf', invitationId: 'I' }, 'name');
  });

  const chunk = { name: 'pdf', invitationId: 'I', clientUploadId: 'u1', chunkIndex: '0', totalChunks: '1' };

  it('clientUploadId: 1 to 25 characters', () => {
    expectBoundary(ChunkFields, { ...chunk, clientUploadId: 'a'.repeat(25) }, { ...chunk, clientUploadId: 'a'.repeat(26) }, 'clientUploadId');
    expectBoundary(ChunkFields, { ...chunk, clientUploadId: 'a' }, { ...chunk, clientUploadId: '' }, 'clientUploadId');
  });

  it('chunkIndex: at least 0', () => {
    expectBoundary(ChunkFields, { ...chunk, chunkIndex: '0' }, { ...chunk, chunkIndex: '-1' }, 'chunkIndex');
  });

  it('totalChunks: at least 1', () => {
    expectBoundary(ChunkFields, { ...chunk, totalChunks: '1' }, { ...chunk, totalChunks: '0' }, 'totalChunks');
  });

  it('chunk numbers, a security events page and a callback port: decimal digits only', () => {
    for (const text of ['', ' 1', '1 ', '0x1', '1e0', '-0', '+1', '1.0', 'Infinity']) {
      expect(ChunkFields.safeParse({ ...chunk, chunkIndex: text }).success, `chunkIndex ${JSON.stringify(text)}`).toBe(false);
      expect(ChunkFields.safeParse({ ...chunk, totalChunks: text }).success, `totalChunks ${JSON.stringify(text)}`).toBe(false);
      expect(SecurityEventsInput.safeParse({ before: text }).success, `before ${JSON.stringify(text)}`).toBe(false);
      expect(WebAuthnAuthQuery.safeParse({ pendingToken: 'p', callbackPort: text }).success, `callbackPort ${JSON.stringify(text)}`).toBe(false);
    }
    expect(ChunkFields.parse({ ...chunk, chunkIndex: '10', totalChunks: '10' })).toMatchObject({ chunkIndex: 10, totalChunks: 10 });
    expect(SecurityEventsInput.parse({ before: '16' })).toEqual({ before: 16 });
    expect(WebAuthnAuthQuery.parse({ pendingToken: 'p', callbackPort: '8080' }).callbackPort).toBe(8080);
  });

  it('access token, ID token and authorization code lifetimes: 1 hour and 10 minutes', () => {
    expect(OIDC_TOKEN_SECONDS).toBe(3600);
    expect(OIDC_CODE_SECONDS).toBe(600);
  });

  it('submission title: 1 to 250 characters, as a whole-value match of its regex', () => {
    const title = new RegExp(`^(?:${defaultSubmissionForm.title.value.param.regex})$`);
    expect(title.test('t'.repeat(250))).toBe(true);
    expect(title.test('t'.repeat(251))).toBe(false);
    expect(title.test('t')).toBe(true);
    expect(title.test('')).toBe(false);
  });

  it('TL;DR: at most 250 characters; abstract: 1 to 5000; pdf maxSize 50; ethics_review at most 200000', () => {
    expect(defaultSubmissionForm.TLDR.value.param).toMatchObject({ fieldName: 'TL;DR', maxLength: 250 });
    expect(defaultSubmissionForm.abstract.value.param).toMatchObject({ minLength: 1, maxLength: 5000 });
    expect(defaultSubmissionForm.pdf.value.param).toEqual({ type: 'file', extensions: ['pdf'], maxSize: 50 });
    expect(defaultEthicsReviewForm.ethics_review.value.param.maxLength).toBe(200000);
  });
});
