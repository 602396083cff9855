import { z } from 'zod';
import { FormDefinition } from '../forms.ts';
import { NonEmptyString, StringList, Timestamp } from './common.ts';
import { ProfileState } from './profile.ts';

/** A rating field, a list of them, or a displayed name mapped to ordered fallback field names. */
export const ReviewRatingName = z.union([
  z.string(),
  z.array(z.union([z.string(), z.record(z.string(), z.array(z.string()).min(1))])),
]);

/**
 * The venue author-console configuration. Parsing applies the spec's defaults
 * (`decisionName` → `Decision`, `showAuthorProfileStatus` → true).
 *
 * The spec does not mark this object closed; we reject unknown keys anyway, so that a
 * misspelt optional key (`decisonName`) is reported instead of silently falling back to
 * its default.
 */
export const AuthorConsoleConfig = z
  .strictObject({
    header: z.strictObject({ title: z.string().optional(), instructions: z.string().optional() }),
    apiVersion: z.union([z.literal(1), z.literal(2)]),
    venueId: NonEmptyString,
    submissionId: NonEmptyString,
    authorSubmissionField: NonEmptyString,
    officialReviewName: NonEmptyString,
    decisionName: NonEmptyString.default('Decision'),
    reviewRatingName: ReviewRatingName,
    reviewConfidenceName: NonEmptyString,
    authorName: NonEmptyString,
    submissionName: NonEmptyString,
    showAuthorProfileStatus: z.boolean().default(true),
    /** Deprecated; version 1 only. */
    blindSubmissionId: NonEmptyString.optional(),
    showPublisherCopyright: z.boolean().optional(),
    PublisherPublicationTitle: z.string().optional(),
    PublisherArtSourceCode: z.number().optional(),
  })
  .superRefine((config, ctx) => {
    if (config.blindSubmissionId !== undefined && config.apiVersion !== 1) {
      ctx.addIssue({
        code: 'custom',
        path: ['blindSubmissionId'],
        message: 'blindSubmissionId is deprecated and applies only to apiVersion 1',
      });
    }
  }).meta({ id: 'AuthorConsoleConfig' });
export type AuthorConsoleConfig = z.infer<typeof AuthorConsoleConfig>;
export type AuthorConsoleConfigInput = z.input<typeof AuthorConsoleConfig>;

// ---- invitations and notes (not in the spec; see the README) -----------------------------------

/** Ids of venues, groups, invitations: letters, digits and `._~@/-`, as the platform's ids are. */
export const EntityId = z
  .string()
  .min(1)
  .max(300)
  .regex(/^[\w.~@/-]+$/, { message: 'Only letters, digits and . _ ~ @ / - are allowed' });

/**
 * An invitation: the form a note must fill, who may post (`invitees`: ids or groups; `~` is
 * any signed-in user), the readers and writers a new note gets (`${signatures}`,
 * `${content.authorids}` and `${forum.content.authorids}` are filled in from the note), an
 * optional invitation whose notes this one's notes reply to, and an optional deadline.
 */
export const InvitationInput = z.strictObject({
  id: EntityId,
  domain: EntityId,
  form: FormDefinition,
  invitees: StringList.min(1).default(['~']),
  noteReaders: StringList.min(1).default(['everyone']),
  noteWriters: StringList.min(1).default(['${signatures}']),
  readers: StringList.min(1).default(['everyone']),
  replyTo: EntityId.optional(),
  duedate: Timestamp.optional(),
});
export type InvitationInput = z.input<typeof InvitationInput>;

export const Invitation = InvitationInput.extend({
  tauthor: z.string(),
  tcdate: Timestamp,
  tmdate: Timestamp,
}).meta({ id: 'Invitation' });
export type Invitation = z.infer<typeof Invitation>;

export const InvitationsQuery = z.strictObject({ id: EntityId });
export const InvitationsResult = z.strictObject({ invitations: z.array(Invitation) });

const NoteId = z.string().min(1).max(40);

/** A note's content: `{field: {value, readers?}}`, checked against its invitation's form. */
export const NoteContentSchema = z.record(z.string(), z.unknown());

export const Note = z.strictObject({
  id: NoteId,
  invitation: z.string(),
  domain: z.string(),
  number: z.int().min(1),
  forum: z.string(),
  replyto: z.string().nullable(),
  content: NoteContentSchema,
  signatures: z.array(z.string()),
  readers: z.array(z.string()),
  writers: z.array(z.string()),
  cdate: Timestamp,
  mdate: Timestamp,
  tcdate: Timestamp,
  tmdate: Timestamp,
}).meta({ id: 'Note' });
export type Note = z.infer<typeof Note>;

/**
 * `POST /notes`: a new note (`invitation`, `content`, and `forum` when the invitation replies to
 * another's notes), or, with `id`, a revision of one: the fields sent replace the stored ones,
 * and a value `{delete: true}` removes a deletable field.
 */
export const PostNoteInput = z.strictObject({
  id: NoteId.optional(),
  invitation: EntityId,
  forum: NoteId.optional(),
  content: NoteContentSchema,
});
export type PostNoteInput = z.infer<typeof PostNoteInput>;

export const NotesQuery = z
  .strictObject({
    id: NoteId.optional(),
    invitation: EntityId.optional(),
    forum: NoteId.optional(),
    'content.authorids': z.string().min(1).max(300).optional(),
  })
  .refine((q) => Object.values(q).some((v) => v !== undefined), { message: 'Give id, invitation, forum or content.authorids' });
export type NotesQuery = z.infer<typeof NotesQuery>;

export const NotesResult = z.strictObject({ notes: z.array(Note), count: z.int().min(0) });

export const NoteEdit = z.strictObject({
  id: z.string(),
  note: z.strictObject({ id: z.string() }),
  invitation: z.string(),
  content: NoteContentSchema,
  signatures: z.array(z.string()),
  readers: z.array(z.string()),
  writers: z.array(z.string()),
  tauthor: z.string(),
  tcdate: Timestamp,
}).meta({ id: 'NoteEdit' });
export type NoteEdit = z.infer<typeof NoteEdit>;

export const NoteEditsQuery = z.strictObject({ 'note.id': NoteId });
export const NoteEditsResult = z.strictObject({ edits: z.array(NoteEdit) });

// ---- venues and the author console ----------------------------------------------------------

export const VenueQuery = z.strictObject({ venueId: EntityId });

/** `POST /groups/members`: organisers add people to their venue's groups. */
export const AddMembersInput = z.strictObject({ id: EntityId, members: z.array(NonEmptyString.max(300)).min(1).max(1000) });
export const GroupMembersResult = z.strictObject({ id: z.string(), members: z.array(z.string()) });

/** Min, max and average of a rating over a submission's reviews; `N/A` where there is none. */
export const RatingSummary = z.strictObject({
  min: z.union([z.number(), z.literal('N/A')]),
  max: z.union([z.number(), z.literal('N/A')]),
  /** Two decimals, as shown: `5.50`. */
  average: z.string(),
});
export type RatingSummary = z.infer<typeof RatingSummary>;

export const AuthorConsoleSubmission = z.strictObject({
  note: Note,
  reviewCount: z.int().min(0),
  ratings: z.record(z.string(), RatingSummary),
  confidence: RatingSummary,
  decision: z.string().nullable(),
  /** Present when `showAuthorProfileStatus` is not false: each author id with its profile state. */
  authors: z.array(z.strictObject({ id: z.string(), state: ProfileState.nullable() })).optional(),
});

export const AuthorConsole = z.strictObject({
  venueId: z.string(),
  header: z.strictObject({ title: z.string().optional(), instructions: z.string().optional() }),
  submissions: z.array(AuthorConsoleSubmission),
});
export type AuthorConsole = z.infer<typeof AuthorConsole>;

/** The answer of `GET /pdf/compare`. */
export const PdfCompareResult = z.strictObject({ leftNote: NoteEdit, rightNote: NoteEdit, viewerUrl: z.string() });
