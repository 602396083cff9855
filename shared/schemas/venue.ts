import { z } from 'zod';
import { FormDefinition } from '../forms.ts';
import { idList, NonEmptyString, QueryBoolean, queryInt, StringList, Timestamp } from './common.ts';
import { Group } from './group.ts';
import { AttachmentName } from './attachments.ts';
import { ProfileState } from './profile.ts';

/**
 * A rating field, a list of them, or a displayed name mapped to ordered fallback field names.
 * (A new venue's list names one at least, each object one displayed rating: `POST /venues`
 * checks it, `formNameProblems`; configs stored before are read as they are.)
 */
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

/**
 * An invitation as it is answered: ours, and beside it the real platform's v2 `edit` (what a
 * note posted through it gets: its readers, writers and the form as `note.content`), which the
 * platform's own clients read.
 */
export const InvitationView = Invitation.extend({
  edit: z.strictObject({
    readers: z.array(z.string()),
    writers: z.array(z.string()),
    note: z.strictObject({ content: FormDefinition }),
  }),
}).meta({ id: 'InvitationView' });
export type InvitationView = z.infer<typeof InvitationView>;

/** The answer's view of a stored invitation. */
export function invitationView(invitation: Invitation): InvitationView {
  return { ...invitation, edit: { readers: invitation.noteReaders, writers: invitation.noteWriters, note: { content: invitation.form } } };
}

export const InvitationsQuery = z.strictObject({ id: EntityId });
export const InvitationsResult = z.strictObject({ invitations: z.array(InvitationView) });

const NoteId = z.string().min(1).max(40);

/** A note's content: `{field: {value, readers?}}`, checked against its invitation's form. */
export const NoteContentSchema = z.record(z.string(), z.unknown());

export const Note = z.strictObject({
  id: NoteId,
  invitation: z.string(),
  /** The real platform's v2 name: the invitations a note went through (ours: exactly one). */
  invitations: z.array(z.string()),
  /**
   * The API version the note is of, as the real platform's v2 notes say: its web client shows
   * a note without it through its pages for the old API (the forum, a profile's publications).
   */
  version: z.literal(2),
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
  /** When the note was deleted (`DELETE /notes`); only `trash=true` shows such notes. */
  ddate: Timestamp.optional(),
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

/** How `GET /notes` may order its answer; posting order by default. */
export const NotesSort = z.enum(['number', 'number:asc', 'number:desc', 'tcdate', 'tcdate:asc', 'tcdate:desc', 'tmdate', 'tmdate:asc', 'tmdate:desc', 'cdate', 'cdate:asc', 'cdate:desc', 'id', 'id:asc', 'id:desc']);

/**
 * A query key that filters on a content field, `content.title=…`, or on a key of the objects a
 * field's list holds, `content.authors.username=~Ada_Lovelace1`.
 */
const CONTENT_FILTER = /^content\.[A-Za-z0-9_]{1,80}(?:\.[A-Za-z0-9_]{1,80})?$/;

/**
 * `GET /notes`: the filters and paging the real platform's clients send. `content.<field>=v`
 * keeps notes whose field holds `v` (or, for a list, contains it; `content.<field>.<key>=v`, a
 * list of objects one of which has `v` under `key`); `content.authorids` also finds a profile
 * under every username and confirmed email it has; `invitations` (repeated) keeps notes of any
 * of those invitations. `stream=true` answers every match at once; otherwise `limit` (1000 at
 * most) from `offset`, or after the note `after` when sorted by id. `details`, `select` and
 * `count` are accepted and change nothing (whole notes are answered, `count` always).
 * `trash=true` adds deleted notes the caller could write.
 */
/** Venue or invitation ids (`ids=`, `invitations=`), repeated or comma-joined: see `idList`. */
const EntityIdList = idList(EntityId, 100);

const notesQueryFields = {
  id: NoteId.optional(),
  invitation: EntityId.optional(),
  invitations: EntityIdList.optional(),
  forum: NoteId.optional(),
  replyto: NoteId.optional(),
  domain: EntityId.optional(),
  number: queryInt(1, 1_000_000_000).optional(),
  'content.authorids': z.string().min(1).max(300).optional(),
  /** Notes signed by this id (`signatures` may be repeated: signed by any of them). */
  signature: z.string().min(1).max(300).optional(),
  signatures: z.union([z.string().min(1).max(300), z.array(z.string().min(1).max(300)).min(1).max(100)]).optional(),
  /** Notes created at or after this time (ms). */
  mintcdate: queryInt(0, 9_999_999_999_999).optional(),
  details: z.string().max(300).optional(),
  select: z.string().max(1000).optional(),
  stream: QueryBoolean.optional(),
  count: QueryBoolean.optional(),
  trash: QueryBoolean.optional(),
  sort: NotesSort.optional(),
  limit: queryInt(1, 1000).optional(),
  offset: queryInt(0, 1_000_000_000).optional(),
  after: NoteId.optional(),
};

export const NotesQuery = z
  .looseObject(notesQueryFields)
  .superRefine((query, ctx) => {
    const known = new Set(Object.keys(notesQueryFields));
    for (const [key, value] of Object.entries(query)) {
      if (known.has(key)) continue;
      if (!CONTENT_FILTER.test(key)) {
        ctx.addIssue({ code: 'unrecognized_keys', keys: [key], message: `The property ${key} must NOT be present` });
      } else if (typeof value !== 'string' || value.length === 0 || value.length > 1000) {
        ctx.addIssue({ code: 'custom', path: [key], message: `${key} must be one value of 1 to 1000 characters` });
      }
    }
    // Every query names an indexed column to start from; content filters then narrow it, so a
    // query never makes the server read every note.
    const indexed = ['id', 'invitation', 'invitations', 'forum', 'replyto', 'domain', 'content.authorids', 'signature', 'signatures'].some((key) => query[key as keyof typeof query] !== undefined);
    if (!indexed) ctx.addIssue({ code: 'custom', path: [], message: 'Give id, invitation, invitations, forum, replyto, domain, content.authorids or signatures' });
  });
export type NotesQuery = z.infer<typeof NotesQuery>;

/** The content filters of a notes query: `content.title=x` → `{title: 'x'}`, `content.authors.username=y` → `{'authors.username': 'y'}`. */
export function contentFilters(query: NotesQuery): Map<string, string> {
  const filters = new Map<string, string>();
  for (const [key, value] of Object.entries(query)) {
    if (CONTENT_FILTER.test(key) && typeof value === 'string') filters.set(key.slice('content.'.length), value);
  }
  return filters;
}

export const NotesResult = z.strictObject({ notes: z.array(Note), count: z.int().min(0) });

/** `DELETE /notes` (`?id=` or a body `{id}`, as the Python client sends it): its writers delete a note. */
export const DeleteNoteInput = z.strictObject({ id: NoteId });

export const NoteEdit = z.strictObject({
  id: z.string(),
  /** The note as this revision left it, in the real platform's v2 shape (`edit.note.content`). */
  note: z.strictObject({ id: z.string(), content: NoteContentSchema.optional() }),
  invitation: z.string(),
  content: NoteContentSchema,
  signatures: z.array(z.string()),
  readers: z.array(z.string()),
  writers: z.array(z.string()),
  tauthor: z.string(),
  tcdate: Timestamp,
}).meta({ id: 'NoteEdit' });
export type NoteEdit = z.infer<typeof NoteEdit>;

/** An edit's id, as `GET /notes/edits` answers it. */
const EditId = z.string().regex(/^\d{1,15}$/, { message: 'An edit id is a number' });

/**
 * `GET /notes/edits`: the revisions of a note (`note.id`), or one revision by its id (`id`).
 * `invitation`, `trash`, `sort`, `count`, `limit` and `details`, which the real platform's
 * clients send, are accepted; revisions come oldest first.
 */
export const NoteEditsQuery = z
  .strictObject({
    'note.id': NoteId.optional(),
    id: EditId.optional(),
    invitation: EntityId.optional(),
    trash: QueryBoolean.optional(),
    sort: z.enum(['tcdate', 'tcdate:asc', 'tcdate:desc', 'tmdate', 'tmdate:asc', 'tmdate:desc']).optional(),
    count: QueryBoolean.optional(),
    limit: queryInt(1, 1000).optional(),
    details: z.string().max(300).optional(),
  })
  .refine((q) => (q['note.id'] === undefined) !== (q.id === undefined), { message: 'Give either note.id or id', path: ['note.id'] });
export type NoteEditsQuery = z.infer<typeof NoteEditsQuery>;
export const NoteEditsResult = z.strictObject({ edits: z.array(NoteEdit), count: z.int().min(0) });

/**
 * `POST /notes/edits`: the way the real platform's clients post a note. `note` carries the
 * note's `id` (to revise it), `forum` or `replyto` (the note it replies to), `content`, and
 * `ddate` (set: delete the note). The note's readers and writers come from its invitation, as
 * for `POST /notes`; the other v2 fields a client sends back (`invitations`, dates, `license`…)
 * are accepted and do not change the note. `signatures`, when given, must be the caller's own.
 */
const EditNote = z.strictObject({
  id: NoteId.optional(),
  forum: NoteId.optional(),
  replyto: NoteId.optional(),
  content: NoteContentSchema.optional(),
  ddate: Timestamp.nullable().optional(),
  externalId: z.string().max(300).optional(),
  invitations: z.array(z.string().max(300)).max(20).optional(),
  parentInvitations: z.string().max(300).optional(),
  cdate: Timestamp.nullable().optional(),
  pdate: Timestamp.nullable().optional(),
  odate: Timestamp.nullable().optional(),
  mdate: Timestamp.nullable().optional(),
  license: z.string().max(300).optional(),
  signatures: z.array(NonEmptyString.max(300)).max(20).optional(),
  readers: z.array(NonEmptyString.max(300)).max(1000).optional(),
  writers: z.array(NonEmptyString.max(300)).max(1000).optional(),
  nonreaders: z.array(NonEmptyString.max(300)).max(1000).nullable().optional(),
});
export const PostNoteEditInput = z.strictObject({
  invitation: EntityId,
  note: EditNote.default({}),
  signatures: z.array(NonEmptyString.max(300)).min(1).max(20).optional(),
  readers: z.array(NonEmptyString.max(300)).max(1000).optional(),
  writers: z.array(NonEmptyString.max(300)).max(1000).optional(),
  nonreaders: z.array(NonEmptyString.max(300)).max(1000).nullable().optional(),
});
export type PostNoteEditInput = z.infer<typeof PostNoteEditInput>;

/** The answer of `POST /notes/edits`: the edit, with the note as it now stands. */
export const PostedNoteEdit = NoteEdit.omit({ note: true }).extend({ domain: z.string(), note: Note }).meta({ id: 'PostedNoteEdit' });
export type PostedNoteEdit = z.infer<typeof PostedNoteEdit>;

// ---- venues and the author console ----------------------------------------------------------

export const VenueQuery = z.strictObject({ venueId: EntityId });


/**
 * `GET /venues`: venues by id, by ids, or by the invitations they own (`invitations=a,b`);
 * at least one of them.
 */
export const VenuesQuery = z
  .strictObject({ id: EntityId.optional(), ids: EntityIdList.optional(), invitations: EntityIdList.optional() })
  .refine((q) => q.id !== undefined || q.ids !== undefined || q.invitations !== undefined, { message: 'Give id, ids or invitations', path: ['id'] });
export type VenuesQuery = z.infer<typeof VenuesQuery>;

/** A venue: its group's id, its author-console config, and when it was made and last changed. */
export const Venue = z.strictObject({ id: z.string(), config: AuthorConsoleConfig, tcdate: Timestamp, tmdate: Timestamp }).meta({ id: 'Venue' });
export type Venue = z.infer<typeof Venue>;
export const VenuesResult = z.strictObject({ venues: z.array(Venue) });

/**
 * `GET /groups`: a group by id, the groups under a prefix, or the groups a member belongs to
 * directly (see `VenueService.groups` for who may see which). `domain` narrows the answer;
 * `stream`, `limit`, `offset`, `sort`, `count`, `details`, `select` and `web`, which the real
 * platform's clients send, are accepted (`count` is always answered; groups come sorted by id,
 * whole: `select` and `web` change nothing).
 */
export const GroupsQuery = z
  .strictObject({
    id: EntityId.optional(),
    prefix: EntityId.optional(),
    member: z.string().min(1).max(300).optional(),
    domain: EntityId.optional(),
    details: z.string().max(300).optional(),
    select: z.string().max(1000).optional(),
    web: QueryBoolean.optional(),
    stream: QueryBoolean.optional(),
    count: QueryBoolean.optional(),
    sort: z.enum(['id', 'id:asc']).optional(),
    limit: queryInt(1, 10_000).optional(),
    offset: queryInt(0, 1_000_000).optional(),
    /** The groups after this id, in id order (the web client's next page, `getAllWithAfter`), instead of `offset`. */
    after: EntityId.optional(),
  })
  .refine((q) => q.id !== undefined || q.member !== undefined || q.prefix !== undefined, { message: 'Give id, prefix or member', path: ['id'] });
export type GroupsQuery = z.infer<typeof GroupsQuery>;
export const GroupsResult = z.strictObject({ groups: z.array(Group), count: z.int().min(0) });

/** `GET /logs/process?id=`: an edit's processing, as the real platform's clients wait for it. */
export const ProcessLogsQuery = z.strictObject({ id: EditId });
export const ProcessLogsResult = z.strictObject({
  logs: z.array(z.strictObject({ id: z.string(), status: z.literal('ok'), invitation: z.string(), cdate: Timestamp })),
});

/** `GET /groups/attachment` and `GET /invitations/attachment`: a file in a group's or an invitation's content. */
export const EntityAttachmentQuery = z.strictObject({ id: EntityId, name: AttachmentName });

/** `GET /notes/edits/attachment`: a file field as one revision of a note held it. */
export const EditAttachmentQuery = z.strictObject({ id: EditId, name: AttachmentName });

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
