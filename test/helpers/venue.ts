/** An author-console config for a venue, as a super user posts it to `POST /venues`. */
export function venueConfig(venueId: string, overrides: Record<string, unknown> = {}) {
  return {
    header: {},
    apiVersion: 2,
    venueId,
    submissionId: `${venueId}/-/Submission`,
    authorSubmissionField: 'content.authorids',
    officialReviewName: 'Official_Review',
    reviewRatingName: 'rating',
    reviewConfidenceName: 'confidence',
    authorName: 'Authors',
    submissionName: 'Submission',
    ...overrides,
  };
}
