/**
 * Which author-console configs make a venue, through `venue.createVenue` called without HTTP:
 * super users only; the schema's refusals (a missing name, an unknown key, `blindSubmissionId`
 * past version 1); the service's (names that are not identifiers, a venue id that is a person's
 * or inside invitations, a submission outside the venue, a duplicate), each naming its field.
 * (venue.test.ts creates venues over HTTP with `POST /venues`.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionResult } from '../../shared/index.ts';
import { startServices, type TestServices } from '../helpers/caller.ts';
import { PASSWORD } from '../helpers/users.ts';
import { venueConfig } from '../helpers/venue.ts';

let t: TestServices;
let rootToken: string;
let memberToken: string;

async function signIn(email: string, role?: 'superuser'): Promise<string> {
  await t.services.signUp.createUser({ email, password: PASSWORD, fullname: 'Pat Person', state: 'Active', role });
  return ((await t.caller().accounts.login({ id: email, password: PASSWORD })) as SessionResult).token;
}

beforeAll(async () => {
  t = await startServices();
  rootToken = await signIn('root@example.org', 'superuser');
  memberToken = await signIn('member@example.org');
});
afterAll(() => t.close());

const create = (config: Record<string, unknown>, accessToken = rootToken) => t.caller({ accessToken }).venue.createVenue(config as never);
const refusedAt = (path: string, name = 'ValidationError') => ({ cause: { name, status: 400, details: { path } } });

describe('venue.createVenue', () => {
  it('makes a venue for a super user, and its config reads back with the defaults applied', async () => {
    const config = venueConfig('Made.org/2027', { header: { title: 'Made 2027' } });
    const made = await create(config);
    expect(made).toEqual({ ...config, decisionName: 'Decision', showAuthorProfileStatus: true });
    expect(await t.caller().venue.venueConfig({ venueId: 'Made.org/2027' })).toEqual(made);
  });

  it('is for super users only, and for the signed-in', async () => {
    await expect(create(venueConfig('Mine.org'), memberToken)).rejects.toMatchObject({ cause: { name: 'ForbiddenError', status: 403, message: 'Only super users can create venues' } });
    await expect(t.caller().venue.createVenue(venueConfig('Mine.org') as never)).rejects.toMatchObject({ cause: { name: 'UnauthorizedError', status: 401 } });
  });

  it('refuses a config its schema does not describe, naming the field', async () => {
    await expect(create({ ...venueConfig('Missing.org'), officialReviewName: undefined })).rejects.toMatchObject(refusedAt('officialReviewName', 'MissingRequiredError'));
    await expect(create({ ...venueConfig('Blind.org'), blindSubmissionId: 'Blind.org/-/Blind' })).rejects.toMatchObject(refusedAt('blindSubmissionId'));
    await expect(create({ ...venueConfig('Typo.org'), decisonName: 'Verdict' })).rejects.toMatchObject({ cause: { name: 'AdditionalPropertiesError', status: 400, message: expect.stringContaining('decisonName') } });
  });

  it('takes blindSubmissionId on an apiVersion 1 config', async () => {
    const config = venueConfig('Old.org/2019', { apiVersion: 1, blindSubmissionId: 'Old.org/2019/-/Blind_Submission' });
    expect(await create(config)).toMatchObject({ apiVersion: 1, blindSubmissionId: 'Old.org/2019/-/Blind_Submission' });
  });

  it('refuses names that are not identifiers, and an authors group named as another group of the venue', async () => {
    await expect(create(venueConfig('Names.org', { officialReviewName: 'Official Review' }))).rejects.toMatchObject({
      cause: { name: 'ValidationError', message: 'officialReviewName: Official Review must be letters, digits and underscores, starting with a letter', details: { path: 'officialReviewName' } },
    });
    await expect(create(venueConfig('Names.org', { authorName: 'Reviewers' }))).rejects.toMatchObject({
      cause: { name: 'ValidationError', message: 'authorName: Reviewers is the name of another group of the venue', details: { path: 'authorName' } },
    });
  });

  it('lists every problem of a config at once, the first as the error itself', async () => {
    const refused = create(venueConfig('Many.org', { decisionName: '1st', submissionName: 'a-b', submissionId: 'Elsewhere.org/-/Submission' }));
    await expect(refused).rejects.toMatchObject({
      cause: {
        details: { path: 'decisionName' },
        errors: [
          expect.objectContaining({ details: { path: 'decisionName' } }),
          expect.objectContaining({ details: { path: 'submissionName' } }),
          expect.objectContaining({ message: 'submissionId must be inside the venue: Many.org/…', details: { path: 'submissionId' } }),
        ],
      },
    });
  });

  it('refuses a venue id that is a person’s, an email, or inside invitations, naming venueId', async () => {
    for (const venueId of ['~Pat_Person1', 'member@example.org', 'Made.org/2027/-/Sub', 'a//b']) {
      const refused = create(venueConfig(venueId));
      await expect(refused, venueId).rejects.toMatchObject({ cause: { name: 'ValidationError', status: 400 } });
      // The only problem, or the first of several (`errors`), is about venueId.
      const { cause } = (await refused.catch((error: unknown) => error)) as { cause: { details?: unknown; errors?: Array<{ details?: unknown }> } };
      expect(cause.errors?.[0]?.details ?? cause.details, venueId).toEqual(expect.objectContaining({ path: 'venueId' }));
    }
  });

  it('refuses a venue that exists already', async () => {
    await create(venueConfig('Twice.org'));
    await expect(create(venueConfig('Twice.org'))).rejects.toMatchObject({ cause: { name: 'ValidationError', message: 'The venue Twice.org already exists', details: { path: 'venueId' } } });
  });
});
