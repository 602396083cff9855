import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Directory } from '../../server/accounts/directory.ts';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';
import { venueConfig } from '../helpers/venue.ts';

let server: TestServer;
let root: Client;
let author: { id: string; email: string; client: Client };
let coauthor: { id: string; email: string };

const VENUE = 'Conf.org/2027';
const SUBMISSION = `${VENUE}/-/Submission`;
const config = venueConfig(VENUE, { header: { title: 'Conf 2027', instructions: 'Welcome, **authors**.' } });

/** What the attachments endpoint records when a user uploads a file for an invitation's field. */
async function recordUpload(profileId: string, invitation: string, field: string, url: string) {
  await server.service.db('uploads').insert({ profile_id: profileId, invitation, field, url, size: 1000, sha1: url.slice(5, 45), created_at: Date.now() });
}

const PDF = `/pdf/${'1'.repeat(40)}.pdf`;
const submission = (overrides: Record<string, unknown> = {}) => ({
  title: { value: 'Graphs, learned' },
  authors: { value: ['Paper Author', 'Co Author'] },
  authorids: { value: [author.id, coauthor.email] },
  abstract: { value: 'We learn graphs.' },
  pdf: { value: PDF },
  ...overrides,
});

const rowCount = async (table: string) => Number((await server.service.db(table).count({ n: '*' }))[0]?.n);

beforeAll(async () => {
  server = await startServer();
  const admin = await createActiveUser(server, { role: 'superuser', fullname: 'Venue Admin' });
  root = (await loggedIn(server, admin.email)).client;
  const a = await createActiveUser(server, { fullname: 'Paper Author' });
  author = { ...a, client: (await loggedIn(server, a.email)).client };
  coauthor = await createActiveUser(server, { fullname: 'Co Author' });
});
afterAll(async () => {
  await server.close();
});

describe('a venue from its author-console config', () => {
  it('is created by a super user, and its config reads back with the defaults applied', async () => {
    const res = await root.post('/venues', config);
    expect(res.status).toBe(200);
    const read = await new Client(server.url).get(`/venues/${VENUE}/config`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ ...config, decisionName: 'Decision', showAuthorProfileStatus: true });
    expect((await new Client(server.url).get(`/venues/${encodeURIComponent(VENUE)}/config`)).body.venueId).toBe(VENUE);
    for (const id of [SUBMISSION, `${VENUE}/-/Official_Review`, `${VENUE}/-/Decision`, `${VENUE}/-/Ethics_Review`, `${VENUE}/-/Registration`]) {
      const inv = await root.get(`/invitations?id=${encodeURIComponent(id)}`);
      expect(inv.status, id).toBe(200);
    }
    const submissionInvitation = (await root.get(`/invitations?id=${encodeURIComponent(SUBMISSION)}`)).body.invitations[0];
    // Invitations are for organisers and super users.
    expect((await author.client.get(`/invitations?id=${encodeURIComponent(SUBMISSION)}`)).status).toBe(403);
    expect((await new Client(server.url).get(`/invitations?id=${encodeURIComponent(SUBMISSION)}`)).status).toBe(401);
    expect(Object.keys(submissionInvitation.form)).toEqual(['title', 'authors', 'authorids', 'keywords', 'TLDR', 'abstract', 'pdf']);
  });

  it('only super users create venues; a duplicate, a bad config and blindSubmissionId on v2 are refused', async () => {
    expect((await author.client.post('/venues', { ...config, venueId: 'Other.org' })).status).toBe(403);
    const again = await root.post('/venues', config);
    expect(again.status).toBe(400);
    expect(again.body.message).toBe(`The venue ${VENUE} already exists`);
    const blind = await root.post('/venues', { ...config, venueId: 'Blind.org', submissionId: 'Blind.org/-/Submission', blindSubmissionId: 'X' });
    expect(blind.status).toBe(400);
    expect(blind.body.details).toEqual({ path: 'blindSubmissionId', reqId: expect.any(String) });
    const missing = await root.post('/venues', { ...config, venueId: 'Missing.org', submissionId: 'Missing.org/-/S', officialReviewName: undefined });
    expect(missing.body).toMatchObject({ name: 'MissingRequiredError', details: { path: 'officialReviewName' } });
  });

  it('refuses a venue whose ids the readers would refuse, and makes nothing of it', async () => {
    const groups = await rowCount('groups');
    const long = `Long.org/${'x'.repeat(300 - 'Long.org/'.length - '/Ethics_Reviewers'.length + 1)}`;
    const tooLong = await root.post('/venues', { ...config, venueId: long, submissionId: `${long}/-/Submissions`, officialReviewName: 'Review' });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body).toMatchObject({ name: 'ValidationError', details: { path: 'venueId' } });
    const odd = await root.post('/venues', { ...config, venueId: 'Odd.org', submissionId: 'Odd.org/-/Sub mission', officialReviewName: 'R'.repeat(300) });
    expect(odd.status).toBe(400);
    expect(odd.body.errors.map((e: { details: { path: string } }) => e.details.path)).toEqual(['submissionId', 'officialReviewName']);
    expect(await rowCount('groups')).toBe(groups);
    // One character less: every id fits, and the venue is read back.
    const fits = long.slice(0, -1);
    expect((await root.post('/venues', { ...config, venueId: fits, submissionId: `${fits}/-/Submissions`, officialReviewName: 'Review' })).status).toBe(200);
    expect((await root.get(`/venues/${fits}/config`)).status).toBe(200);
  });

  it('refuses a config whose ids or field names collide, or are no field names, and makes nothing of it', async () => {
    const groups = await rowCount('groups');
    const invitations = await rowCount('invitations');
    const at = (venueId: string, changes: Record<string, unknown>) => root.post('/venues', { ...config, venueId, submissionId: `${venueId}/-/Submission`, ...changes });
    const refusedAt = async (res: Awaited<ReturnType<typeof at>>) => {
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      return (res.body.errors ?? [res.body]).map((e: { details: { path: string } }) => e.details.path);
    };
    // Two invitations of one id: the one made last would take the other's place.
    expect(await refusedAt(await at('Same1.org', { decisionName: 'Official_Review' }))).toEqual(['decisionName']);
    expect(await refusedAt(await at('Same2.org', { decisionName: 'Registration' }))).toEqual(['decisionName']);
    expect(await refusedAt(await at('Same3.org', { officialReviewName: 'Ethics_Review' }))).toEqual(['officialReviewName']);
    expect(await refusedAt(await at('Same4.org', { submissionId: 'Same4.org/-/Official_Review' }))).toEqual(['officialReviewName']);
    // Field names a form cannot hold, or that take another field's place.
    expect(await refusedAt(await at('Fields1.org', { reviewRatingName: 'over all' }))).toEqual(['reviewRatingName']);
    expect(await refusedAt(await at('Fields2.org', { reviewRatingName: ['rating', { Overall: ['over-all'] }], reviewConfidenceName: 'confidence level' }))).toEqual(['reviewRatingName', 'reviewConfidenceName']);
    expect(await refusedAt(await at('Fields3.org', { reviewRatingName: 'review' }))).toEqual(['reviewRatingName']);
    expect(await refusedAt(await at('Fields4.org', { reviewRatingName: 'rating', reviewConfidenceName: 'rating' }))).toEqual(['reviewConfidenceName']);
    expect(await refusedAt(await at('Fields5.org', { decisionName: 'Comment' }))).toEqual(['decisionName']);
    expect(await refusedAt(await at('Fields6.org', { reviewRatingName: '' }))).toEqual(['reviewRatingName']);
    // An object maps one displayed rating; a list names at least one.
    for (const ratings of ['[]', '[{}]', '[{"A":["a"],"B":["b"]}]', '[{"__proto__":["x"]}]']) {
      const body = JSON.stringify({ ...config, venueId: 'Ratings.org', submissionId: 'Ratings.org/-/Submission', reviewRatingName: 'RATINGS' }).replace('"RATINGS"', ratings);
      const res = await root.request('POST', '/venues', body);
      expect(res.status, ratings).toBe(400);
      expect(res.body.details.path, ratings).toMatch(/^reviewRatingName/);
    }
    expect(await rowCount('groups')).toBe(groups);
    expect(await rowCount('invitations')).toBe(invitations);
    // `constructor` is a field name like any other: its form has the field, and reads back.
    expect((await at('Fields7.org', { reviewRatingName: 'constructor' })).status).toBe(200);
    const review = await root.get(`/invitations?id=${encodeURIComponent('Fields7.org/-/Official_Review')}`);
    expect(review.status).toBe(200);
    expect(Object.keys(review.body.invitations[0].form)).toEqual(['constructor', 'confidence', 'review']);
    // A config stored before these checks (several displayed ratings in one object) is still read.
    const stored = await server.service.db('groups').where({ id: 'Fields7.org' }).first();
    const data = JSON.parse(stored.data);
    data.config.reviewRatingName = [{ Overall: ['overall'], Soundness: ['soundness'] }];
    await server.service.db('groups').where({ id: 'Fields7.org' }).update({ data: JSON.stringify(data) });
    const read = await root.get('/venues/Fields7.org/config');
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    expect(read.body.reviewRatingName).toEqual([{ Overall: ['overall'], Soundness: ['soundness'] }]);
  });
});

describe('notes', () => {
  let paperId: string;

  it('a bad submission gets one 400 listing every problem, and nothing is stored', async () => {
    const before = [await rowCount('notes'), await rowCount('note_edits')];
    const { abstract: _a, ...content } = submission({ title: { value: 't'.repeat(251) }, venue: { value: 'Somewhere' } });
    const res = await author.client.post('/notes', { invitation: SUBMISSION, content });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { name: string; details: { path: string } }) => [e.details.path, e.name])).toEqual([
      ['content/venue', 'AdditionalPropertiesError'],
      ['content/title/value', 'ValidationError'],
      ['content/abstract/value', 'MissingRequiredError'],
      ['content/pdf/value', 'ValidationError'],
    ]);
    expect([await rowCount('notes'), await rowCount('note_edits')]).toEqual(before);
  });

  it('a file field takes only a URL this user uploaded for this invitation and field', async () => {
    await recordUpload(coauthor.id, SUBMISSION, 'pdf', PDF);
    const res = await author.client.post('/notes', { invitation: SUBMISSION, content: submission() });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ details: { path: 'content/pdf/value' }, message: 'pdf must be a file you uploaded for this invitation and field' });
  });

  it('an author posts a submission and gets the stored note back', async () => {
    await recordUpload(author.id, SUBMISSION, 'pdf', PDF);
    const res = await author.client.post('/notes', { invitation: SUBMISSION, content: submission() });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: expect.stringMatching(/^[A-Za-z0-9]{10}$/),
      invitation: SUBMISSION,
      domain: VENUE,
      number: 1,
      replyto: null,
      signatures: [author.id],
      content: submission(),
    });
    expect(res.body.forum).toBe(res.body.id);
    expect(res.body.readers).toEqual([VENUE, `${VENUE}/Program_Chairs`, `${VENUE}/Reviewers`, author.id, coauthor.email]);
    paperId = res.body.id;
  });

  it('readers are enforced: a guest and a stranger see nothing, the authors see it', async () => {
    // Asked by id, as the real platform answers: a note one may not read is a 403, a missing one a 404.
    expect((await new Client(server.url).get(`/notes?id=${paperId}`)).body).toMatchObject({ status: 403, name: 'ForbiddenError' });
    expect((await new Client(server.url).get('/notes?id=NoSuchNote')).body).toMatchObject({ status: 404, name: 'NotFoundError', message: 'Note Not Found: NoSuchNote' });
    const stranger = (await loggedIn(server, (await createActiveUser(server)).email)).client;
    expect((await stranger.get(`/notes?invitation=${encodeURIComponent(SUBMISSION)}`)).body.count).toBe(0);
    expect((await author.client.get(`/notes?content.authorids=${encodeURIComponent(author.id)}`)).body.notes.map((n: { id: string }) => n.id)).toEqual([paperId]);
    expect((await root.get(`/notes?id=${paperId}`)).body.count).toBe(1);
    expect((await new Client(server.url).get('/notes')).status).toBe(400);
  });

  it('every revision is kept, and a deletable field can be removed', async () => {
    const first = await author.client.post('/notes', { id: paperId, invitation: SUBMISSION, content: { title: { value: 'Graphs, relearned' }, keywords: { value: 'graphs' } } });
    expect(first.status).toBe(200);
    expect(first.body.content.title).toEqual({ value: 'Graphs, relearned' });
    expect(first.body.content.abstract).toEqual({ value: 'We learn graphs.' });
    const second = await author.client.post('/notes', { id: paperId, invitation: SUBMISSION, content: { keywords: { value: { delete: true } } } });
    expect(second.body.content.keywords).toBeUndefined();
    const edits = await author.client.get(`/notes/edits?note.id=${paperId}`);
    expect(edits.body.edits.map((e: { content: { title: { value: string } } }) => e.content.title.value)).toEqual([
      'Graphs, learned',
      'Graphs, relearned',
      'Graphs, relearned',
    ]);
    expect((await new Client(server.url).get(`/notes/edits?note.id=${paperId}`)).status).toBe(404);
    const stranger = (await loggedIn(server, (await createActiveUser(server)).email)).client;
    expect((await stranger.post('/notes', { id: paperId, invitation: SUBMISSION, content: { title: { value: 'Mine now' } } })).status).toBe(404);
  });

  it('reviews, a decision, and the author console', async () => {
    const reviewers = await Promise.all([createActiveUser(server, { fullname: 'Re Viewer' }), createActiveUser(server, { fullname: 'Critical Reviewer' })]);
    const notInvited = await author.client.post('/notes', {
      invitation: `${VENUE}/-/Official_Review`,
      forum: paperId,
      content: { rating: { value: '10: top' }, confidence: { value: '5: certain' } },
    });
    expect(notInvited.status).toBe(403);

    const added = await root.post('/groups/members', { id: `${VENUE}/Reviewers`, members: reviewers.map((r) => r.id) });
    expect(added.body.members.sort()).toEqual(reviewers.map((r) => r.id).sort());
    for (const [reviewer, rating, confidence] of [
      [reviewers[0], '8: accept', '4: confident'],
      [reviewers[1], '3: reject', '2: unsure'],
    ] as const) {
      const client = (await loggedIn(server, reviewer?.email ?? '')).client;
      const res = await client.post('/notes', {
        invitation: `${VENUE}/-/Official_Review`,
        forum: paperId,
        content: { rating: { value: rating }, confidence: { value: confidence }, review: { value: 'Thorough.' } },
      });
      expect(res.body).toMatchObject({ forum: paperId, replyto: paperId, number: expect.any(Number) });
    }
    const noForum = await root.post('/notes', { invitation: `${VENUE}/-/Official_Review`, content: { rating: { value: '1' }, confidence: { value: '1' } } });
    expect(noForum.body).toMatchObject({ status: 400, details: { path: 'forum' } });

    const decision = await root.post('/notes', { invitation: `${VENUE}/-/Decision`, forum: paperId, content: { decision: { value: 'Accept (Poster)' } } });
    expect(decision.status).toBe(200);

    const console = await author.client.get(`/venues/${VENUE}/author-console`);
    expect(console.status).toBe(200);
    expect(console.body).toMatchObject({ venueId: VENUE, header: config.header });
    expect(console.body.submissions).toHaveLength(1);
    expect(console.body.submissions[0]).toMatchObject({
      note: { id: paperId },
      reviewCount: 2,
      ratings: { rating: { min: 3, max: 8, average: '5.50' } },
      confidence: { min: 2, max: 4, average: '3.00' },
      decision: 'Accept (Poster)',
      authors: [
        { id: author.id, state: 'Active' },
        { id: coauthor.email, state: 'Active' },
      ],
    });
    // A review posted to the paper's own invitation, as the real platform names it
    // (`{venueId}/{submissionName}{number}/-/{officialReviewName}`), counts as well.
    const venueReview = (await root.get(`/invitations?id=${encodeURIComponent(`${VENUE}/-/Official_Review`)}`)).body.invitations[0];
    const paperReview = `${VENUE}/Submission${console.body.submissions[0].note.number}/-/Official_Review`;
    const made = await root.post('/invitations', { id: paperReview, domain: VENUE, form: venueReview.form, invitees: [`${VENUE}/Reviewers`], replyTo: SUBMISSION, noteReaders: venueReview.noteReaders });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const third = (await loggedIn(server, reviewers[0]?.email ?? '')).client;
    expect((await third.post('/notes', { invitation: paperReview, forum: paperId, content: { rating: { value: '5: borderline' }, confidence: { value: '3: fairly' } } })).status).toBe(200);
    expect((await author.client.get(`/venues/${VENUE}/author-console`)).body.submissions[0]).toMatchObject({ reviewCount: 3, ratings: { rating: { min: 3, max: 8, average: '5.33' } } });
    // A user with no submissions sees an empty console.
    const other = (await loggedIn(server, (await createActiveUser(server)).email)).client;
    expect((await other.get(`/venues/${VENUE}/author-console`)).body.submissions).toEqual([]);
  });

  it('a limited profile may not author notes; a closed invitation takes none', async () => {
    const limited = await createActiveUser(server);
    await server.service.db('profiles').where({ id: limited.id }).update({ state: 'Limited' });
    const res = await (await loggedIn(server, limited.email)).client.post('/notes', { invitation: SUBMISSION, content: submission() });
    expect(res.status).toBe(403);
    expect(res.body.message).toBe('A limited profile cannot author notes');

    const closed = await root.post('/invitations', {
      id: `${VENUE}/-/Late_Submission`,
      domain: VENUE,
      form: { title: { order: 1, value: { param: { type: 'string' } } } },
      duedate: Date.now() - 1000,
    });
    expect(closed.status).toBe(200);
    const late = await author.client.post('/notes', { invitation: `${VENUE}/-/Late_Submission`, content: { title: { value: 'Late' } } });
    expect(late.status).toBe(400);
    expect(late.body.message).toBe(`The invitation ${VENUE}/-/Late_Submission is closed`);
  });

  it('a guest sees the notes readable by everyone, and only those', async () => {
    const res = await root.post('/invitations', {
      id: `${VENUE}/-/Public_Comment`,
      domain: VENUE,
      form: { comment: { order: 1, value: { param: { type: 'string', maxLength: 500 } } } },
      noteReaders: ['everyone'],
    });
    expect(res.status).toBe(200);
    const note = await author.client.post('/notes', { invitation: `${VENUE}/-/Public_Comment`, content: { comment: { value: 'Open to all.' } } });
    expect(note.status).toBe(200);
    const guest = await new Client(server.url).get(`/notes?invitation=${encodeURIComponent(`${VENUE}/-/Public_Comment`)}`);
    expect(guest.body.notes.map((n: { id: string }) => n.id)).toEqual([note.body.id]);
    expect((await new Client(server.url).get(`/notes?invitation=${encodeURIComponent(SUBMISSION)}`)).body.count).toBe(0);
  });

  it('only organisers replace invitations; unknown invitations are 404', async () => {
    const res = await author.client.post('/invitations', { id: `${VENUE}/-/Mine`, domain: VENUE, form: {} });
    expect(res.status).toBe(403);
    expect((await author.client.post('/notes', { invitation: 'Nowhere/-/X', content: {} })).status).toBe(404);
    expect((await root.get('/invitations?id=Nowhere/-/X')).status).toBe(404);
  });
});

describe('a ratings config with fallbacks', () => {
  it('uses the first field present, per displayed rating', async () => {
    const venue = 'Fallback.org';
    const res = await root.post('/venues', {
      ...config,
      venueId: venue,
      submissionId: `${venue}/-/Submission`,
      reviewRatingName: [{ overall: ['overall_rating', 'rating'] }, 'soundness'],
      showAuthorProfileStatus: false,
    });
    expect(res.status).toBe(200);
    const form = (await root.get(`/invitations?id=${encodeURIComponent(`${venue}/-/Official_Review`)}`)).body.invitations[0].form;
    expect(Object.keys(form)).toEqual(['overall_rating', 'rating', 'soundness', 'confidence', 'review']);
  });
});

describe('GET /groups pages', () => {
  it('by offset, or after an id as the web client asks for its next page (getAllWithAfter)', async () => {
    const all = (await root.get(`/groups?prefix=${encodeURIComponent(VENUE)}`)).body.groups.map((g: { id: string }) => g.id);
    expect(all.length).toBeGreaterThan(2);
    expect([...all].sort()).toEqual(all);
    const firstPage = await root.get(`/groups?prefix=${encodeURIComponent(VENUE)}&limit=2`);
    expect(firstPage.body.groups.map((g: { id: string }) => g.id)).toEqual(all.slice(0, 2));
    const next = await root.get(`/groups?prefix=${encodeURIComponent(VENUE)}&after=${encodeURIComponent(all[1])}&count=false`);
    expect(next.status).toBe(200);
    expect(next.body.groups.map((g: { id: string }) => g.id)).toEqual(all.slice(2));
  });

  it('reads the ids of a prefix from the cursor on, so a page past the first thousand is not empty', async () => {
    const all = (await root.get(`/groups?prefix=${encodeURIComponent(VENUE)}`)).body.groups.map((g: { id: string }) => g.id);
    const people = new Directory(server.service.db);
    // One id read at a time, as if each page ended at the read's bound: the cursor walks them all.
    const walked: string[] = [];
    for (let after: string | undefined; ; ) {
      const [id] = await people.groupIdsWithPrefix(VENUE, 1, after);
      if (id === undefined || walked.length > all.length + 50) break;
      walked.push(id);
      after = id;
    }
    expect(walked.filter((id) => all.includes(id))).toEqual(all);
  });
});
