import { type AuthorConsole, type Note, type RatingSummary } from '../../shared/index.ts';
import type { Viewer } from '../accounts/viewer.ts';
import { fieldValue } from './notes.ts';
import { decisionField, ratingFields } from './official-forms.ts';
import { type Repos, type VenueDeps, VenuePart } from './readers.ts';
import type { VenueService } from './venues.ts';

/** `8: accept` counts as 8; a number is itself; anything else does not count. */
export function ratingValue(value: unknown): number | null {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value !== 'string') return null;
  const match = /^\s*(-?\d+(?:\.\d+)?)/.exec(value);
  return match?.[1] ? Number(match[1]) : null;
}

export function summarise(values: number[]): RatingSummary {
  if (values.length === 0) return { min: 'N/A', max: 'N/A', average: 'N/A' };
  const sum = values.reduce((a, b) => a + b, 0);
  return { min: Math.min(...values), max: Math.max(...values), average: (sum / values.length).toFixed(2) };
}

/** The author console: an author's submissions to a venue, with their reviews' ratings and the decision. */
export class AuthorConsoleService extends VenuePart {
  readonly #venues: VenueService;

  constructor(deps: VenueDeps & { venues: VenueService }) {
    super(deps);
    this.#venues = deps.venues;
  }

  /**
   * What the author console shows the caller: their submissions to the venue (notes of
   * `submissionId` whose `authorSubmissionField` holds one of their ids), and for each the
   * official reviews' ratings (min, max, average), the confidence, the decision and, unless
   * `showAuthorProfileStatus` is false, each author's profile state.
   */
  async authorConsole(venueId: string, reader: Viewer): Promise<AuthorConsole> {
    const config = await this.#venues.venueConfig(venueId);
    const repos = this.repos();
    const ids = await this.readers.identities(reader, repos.people);
    const field = config.authorSubmissionField.replace(/^content\./, '');
    const mine = (await repos.venues.findNotes({ invitation: config.submissionId })).filter((note) => {
      const value = fieldValue(note, field);
      return Array.isArray(value) && value.some((v) => typeof v === 'string' && ids.has(v)) && this.readers.canRead(note.readers, ids, reader);
    });
    const submissions = [];
    for (const note of mine) {
      // A paper's reviews and decision: posted to the venue's invitation (`POST /venues` makes
      // `{venueId}/-/{officialReviewName}`), or to the paper's own, whose id the real platform
      // composes from `submissionName` and the paper's number: `{venueId}/{submissionName}{number}/-/{officialReviewName}`.
      const paper = `${venueId}/${config.submissionName}${note.number}/-/`;
      const reviewInvitations = [`${venueId}/-/${config.officialReviewName}`, `${paper}${config.officialReviewName}`];
      const decisionInvitations = [`${venueId}/-/${config.decisionName}`, `${paper}${config.decisionName}`];
      const replies = (await repos.venues.findNotes({ forum: note.id })).filter((n) => this.readers.canRead(n.readers, ids, reader));
      const reviews = replies.filter((n) => reviewInvitations.includes(n.invitation));
      const decisionNote = replies.filter((n) => decisionInvitations.includes(n.invitation)).at(-1);
      const ratings: Record<string, RatingSummary> = {};
      for (const { display, fields } of ratingFields(config.reviewRatingName)) {
        const values = reviews
          .map((review) => fields.map((f) => ratingValue(fieldValue(review, f))).find((v) => v !== null) ?? null)
          .filter((v): v is number => v !== null);
        ratings[display] = summarise(values);
      }
      const confidence = summarise(
        reviews.map((r) => ratingValue(fieldValue(r, config.reviewConfidenceName))).filter((v): v is number => v !== null),
      );
      const decision = decisionNote ? fieldValue(decisionNote, decisionField(config)) : undefined;
      const submission = {
        note,
        reviewCount: reviews.length,
        ratings,
        confidence,
        decision: typeof decision === 'string' ? decision : null,
        ...(config.showAuthorProfileStatus !== false ? { authors: await this.#authorStates(note, field, repos) } : {}),
      };
      submissions.push(submission);
    }
    return { venueId, header: config.header, submissions };
  }

  async #authorStates(note: Note, field: string, repos: Repos) {
    const value = fieldValue(note, field);
    const authors = Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
    return Promise.all(
      authors.map(async (id) => {
        // As searches and `GET /profiles` would show it: never a sign-up not yet activated, or a deleted profile.
        return { id, state: await repos.people.shownStateOf(id) };
      }),
    );
  }
}
