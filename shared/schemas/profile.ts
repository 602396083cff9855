import { z } from 'zod';
import { AccountId, idList, NonEmptyString, QueryBoolean, queryInt, StringList, Timestamp, Year } from './common.ts';

export const ProfileState = z.enum([
  'Active',
  'Active Institutional',
  'Active Automatic',
  'Inactive',
  'Blocked',
  'Rejected',
  'Needs Moderation',
  'Merged',
  'Limited',
]);
export type ProfileState = z.infer<typeof ProfileState>;

/**
 * Lengths are limited here, where a value too long is a 400 naming its field; the database's
 * columns hold any length (PostgreSQL's `varchar(255)` made a long name a 500).
 */
const Text = (max: number) => z.string().max(max);
const LongText = NonEmptyString.max(300);

/**
 * Whether a profile's link may be put in an `href`: no scheme (`www.example.org`), or `http:` /
 * `https:`. Browsers drop tabs, newlines and control characters inside a URL and ignore leading
 * spaces, so they are dropped here too before the scheme is read (`java\nscript:` is
 * `javascript:` to a browser).
 */
export function isWebLink(value: string): boolean {
  const compact = value.replace(/[\u0000-\u0020\u007f]/g, '');
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(compact)?.[1]?.toLowerCase();
  return scheme === undefined || scheme === 'http' || scheme === 'https';
}
const WEB_LINK_MESSAGE = 'must be a web address (http or https)';
/** A profile's link (homepage, DBLP, Google Scholar, …): a web address, or empty. */
const Link = Text(1000).refine(isWebLink, WEB_LINK_MESSAGE);

export const Name = z.strictObject({
  preferred: z.boolean().optional(),
  first: Text(100).nullable().optional(),
  middle: Text(100).nullable().optional(),
  last: Text(100).nullable().optional(),
  fullname: Text(300).optional(),
  username: Text(300).nullable().optional(),
});
export type Name = z.infer<typeof Name>;

/**
 * `domain` is required: it is what activation matches against the institution list. `name` is
 * optional, as the real platform accepts it (its clients send `{country, domain}`); a page shows
 * the domain where the name is missing.
 */
export const Institution = z.strictObject({
  name: LongText.optional(),
  domain: LongText,
  country: LongText.nullable().optional(),
  stateProvince: LongText.nullable().optional(),
  city: LongText.nullable().optional(),
  department: LongText.nullable().optional(),
});

export const HistoryEntry = z.strictObject({
  position: LongText,
  institution: Institution,
  start: Year,
  end: Year.optional(),
});
export type HistoryEntry = z.infer<typeof HistoryEntry>;

/** `relation` and `name` are required (as metaContent requires them); the rest is optional. */
export const Relation = z.strictObject({
  relation: LongText,
  name: LongText,
  email: NonEmptyString.max(254).optional(),
  username: LongText.optional(),
  start: Year.optional(),
  end: Year.optional(),
  readers: StringList.optional(),
});
export type Relation = z.infer<typeof Relation>;

export const ExpertiseEntry = z.strictObject({
  keywords: z.array(LongText).min(1).nullable(),
  start: Year,
  end: Year.optional(),
});
export type ExpertiseEntry = z.infer<typeof ExpertiseEntry>;

export const ProfileContent = z.strictObject({
  yearOfBirth: z.int().optional(),
  dob: z.int().optional(),
  isMinor: z.boolean().optional(),
  isOver18: z.boolean().optional(),
  preferredEmail: Text(254).optional(),
  gender: Text(100).nullable().optional(),
  homepage: Link.optional(),
  dblp: Link.optional(),
  gscholar: Link.optional(),
  wikipedia: Link.optional(),
  linkedin: Link.optional(),
  semanticScholar: Link.optional(),
  aclanthology: Link.optional(),
  orcid: Link.optional(),
  names: z.array(Name).optional(),
  pronouns: z.string().max(50).optional(),
  emails: z.array(Text(254)).optional(),
  emailsConfirmed: z.array(Text(254)).optional(),
  history: z.array(HistoryEntry).min(1).nullable().optional(),
  relations: z.array(Relation).nullable().optional(),
  expertise: z.array(ExpertiseEntry).nullable().optional(),
}).meta({ id: 'ProfileContent' });
export type ProfileContent = z.infer<typeof ProfileContent>;

export const PastState = z.strictObject({
  state: ProfileState,
  date: z.int().min(0),
  setBy: z.string(),
});
export type PastState = z.infer<typeof PastState>;

export const SimplifiedProfile = z.strictObject({
  id: z.string(),
  first: z.string().nullable().optional(),
  middle: z.string().nullable().optional(),
  last: z.string().nullable().optional(),
  fullname: NonEmptyString,
  emails: z.array(z.string()),
  preferredEmail: z.string().optional(),
  usernames: z.array(NonEmptyString),
  preferredId: NonEmptyString,
  state: ProfileState,
  termsTimestamp: Timestamp.optional(),
  dobTimestamp: Timestamp.optional(),
  tokenVersion: z.int().min(0),
}).meta({ id: 'SimplifiedProfile' });
export type SimplifiedProfile = z.infer<typeof SimplifiedProfile>;

/** The inner shape of `metaContent` is not in the spec; on a Profile it is carried as an object. */
export const Profile = z.strictObject({
  id: z.string(),
  active: z.boolean().optional(),
  password: z.boolean().optional(),
  invitation: z.string(),
  email: z.string().optional(),
  confirmedEmails: z.array(z.string()).optional(),
  content: ProfileContent,
  metaContent: z.record(z.string(), z.unknown()).optional(),
  ddate: Timestamp.nullable().optional(),
  tcdate: Timestamp.optional(),
  tmdate: Timestamp.optional(),
  tauthor: z.string().optional(),
  readers: z.array(z.string()),
  nonreaders: z.array(z.string()).optional(),
  writers: z.array(z.string()),
  signatures: z.array(z.string()),
  state: ProfileState.optional(),
  pastStates: z.array(PastState).optional(),
  termsTimestamp: Timestamp.optional(),
  dobTimestamp: Timestamp.optional(),
  tokenVersion: z.int().min(0).optional(),
  lastLogIn: Timestamp.optional(),
}).meta({ id: 'Profile' });
export type Profile = z.infer<typeof Profile>;

// ---- metaContent of a ProfileReference -------------------------------------------------------

/** Exactly one item: the spec's single-valued metaContent arrays. */
const one = <T extends z.ZodType>(item: T) => z.array(item).length(1);

const atLeastOneOf =
  (keys: readonly string[]) =>
  (value: Record<string, unknown>, ctx: z.RefinementCtx) => {
    if (!keys.some((key) => value[key] !== undefined)) {
      ctx.addIssue({ code: 'custom', message: `Must have at least one of ${keys.join(', ')}` });
    }
  };

const singleValued = <T extends z.ZodType>(value: T) =>
  z
    .strictObject({
      values: one(value).optional(),
      weights: one(z.int()).optional(),
      signatures: one(NonEmptyString).optional(),
    })
    .superRefine(atLeastOneOf(['values', 'weights', 'signatures']));

const MetaName = z.union([
  z.strictObject({
    first: NonEmptyString,
    last: NonEmptyString,
    middle: z.string().nullable().optional(),
    fullname: z.string().optional(),
    username: z.string().nullable().optional(),
    preferred: z.boolean().optional(),
  }),
  z.strictObject({
    fullname: NonEmptyString,
    first: z.string().nullable().optional(),
    last: z.string().nullable().optional(),
    middle: z.string().nullable().optional(),
    username: z.string().nullable().optional(),
    preferred: z.boolean().optional(),
  }),
]);

const MetaRelation = Relation.extend({ readers: StringList.nullable().optional() });

/**
 * A multi-valued key is either `{values, weights}` or a non-empty list of signed entries.
 * The spec names only `signatures` as required on an entry, so the rest of an entry is kept
 * as sent.
 */
const multiValued = <T extends z.ZodType>(value: T, minValues = 0) =>
  z.union([
    z.strictObject({ values: z.array(value).min(minValues), weights: z.array(z.int()) }),
    z.array(z.looseObject({ signatures: z.array(NonEmptyString).min(1) })).min(1),
  ]);

export const MetaContent = z.strictObject({
  preferredEmail: singleValued(NonEmptyString).optional(),
  gender: singleValued(NonEmptyString).optional(),
  homepage: singleValued(NonEmptyString.refine(isWebLink, WEB_LINK_MESSAGE)).optional(),
  dblp: singleValued(NonEmptyString.refine(isWebLink, WEB_LINK_MESSAGE)).optional(),
  gscholar: singleValued(NonEmptyString.refine(isWebLink, WEB_LINK_MESSAGE)).optional(),
  wikipedia: singleValued(NonEmptyString.refine(isWebLink, WEB_LINK_MESSAGE)).optional(),
  linkedin: singleValued(NonEmptyString.refine(isWebLink, WEB_LINK_MESSAGE)).optional(),
  aclanthology: singleValued(NonEmptyString.refine(isWebLink, WEB_LINK_MESSAGE)).optional(),
  orcid: singleValued(NonEmptyString.refine(isWebLink, WEB_LINK_MESSAGE)).optional(),
  semanticScholar: singleValued(NonEmptyString.refine(isWebLink, WEB_LINK_MESSAGE)).optional(),
  pronouns: singleValued(NonEmptyString).optional(),
  yearOfBirth: singleValued(z.int()).optional(),
  dob: singleValued(z.int()).optional(),
  names: multiValued(MetaName).optional(),
  emails: multiValued(z.string(), 1).optional(),
  history: multiValued(HistoryEntry).optional(),
  relations: multiValued(MetaRelation).optional(),
  expertise: multiValued(ExpertiseEntry).optional(),
});
export type MetaContent = z.infer<typeof MetaContent>;

export const ProfileReference = z.strictObject({
  signatures: z.array(NonEmptyString).min(1),
  id: NonEmptyString.optional(),
  invitation: NonEmptyString.optional(),
  referent: NonEmptyString.optional(),
  /** Accepted and ignored, so a client can post back a profile it read. */
  dobTimestamp: z.unknown().optional(),
  tcdate: Timestamp.optional(),
  tmdate: Timestamp.optional(),
  ddate: Timestamp.nullable().optional(),
  packaging: z.record(z.string(), z.unknown()).optional(),
  active: z.boolean().optional(),
  password: z.boolean().optional(),
  tauthor: z.string().optional(),
  state: ProfileState.optional(),
  lastLogIn: Timestamp.optional(),
  pastStates: z.array(PastState).optional(),
  content: ProfileContent.optional(),
  readers: StringList.optional(),
  writers: StringList.optional(),
  nonreaders: z.array(z.string()).nullable().optional(),
  metaContent: MetaContent.optional(),
});
export type ProfileReference = z.infer<typeof ProfileReference>;

// ---- requests about profiles -------------------------------------------------------------------

/** `GET /profiles`: no parameter asks "who am I"; `id` or `email` looks one profile up. */
const SearchText = z.string().min(1).max(300);

/**
 * `GET /profiles`: no parameter is "who am I"; `id` or `email` looks one profile up (an unknown
 * id or email answers an empty list, as the real platform does); `ids` (comma-separated, as the
 * web client's author console sends them) several, as `POST /profiles/search` with `ids` does;
 * `first`, `middle`, `last` search by name as `GET /profiles/search` does. `es` (the real
 * platform's search-engine switch, which its clients send) is accepted and changes nothing.
 */
export const ProfilesQuery = z
  .strictObject({
    id: AccountId.optional(),
    email: AccountId.optional(),
    ids: idList(AccountId, 1000).optional(),
    first: SearchText.optional(),
    middle: SearchText.optional(),
    last: SearchText.optional(),
    es: QueryBoolean.optional(),
  })
  .refine((q) => [q.id, q.email, q.ids, q.first ?? q.middle ?? q.last].filter((v) => v !== undefined).length <= 1, {
    message: 'Give one of id, email, ids, or a name (first, middle, last)',
  });
export type ProfilesQuery = z.infer<typeof ProfilesQuery>;

/**
 * `GET /profiles/search`: `term` (an email, a tilde username or the start of one, or the start
 * of a name), `fullname` or `first`/`middle`/`last` (the whole name), `id` (one tilde username)
 * or `email` (one address, as `GET /profiles?email=` finds it: a confirmed one, the caller's
 * own, or any for moderators), the last two as the web client's author search sends
 * them. Deleted, merged and blocked profiles are left out; a moderator's or super user's `trash`
 * and `withBlocked` keep deleted and blocked ones in.
 */
export const ProfileSearchQuery = z
  .strictObject({
    // The start of a name or a tilde id: one letter would list nearly everyone.
    term: SearchText.refine((term) => term.includes('@') || term.trim().replace(/^~/, '').length >= 2, 'A search term needs at least 2 characters').optional(),
    fullname: SearchText.optional(),
    first: SearchText.optional(),
    middle: SearchText.optional(),
    last: SearchText.optional(),
    id: AccountId.optional(),
    email: AccountId.optional(),
    es: QueryBoolean.optional(),
    trash: QueryBoolean.optional(),
    withBlocked: QueryBoolean.optional(),
    limit: queryInt(1, 1000).optional(),
    offset: queryInt(0, 1_000_000).optional(),
  })
  .refine((q) => [q.term, q.fullname, q.id, q.email, q.first ?? q.middle ?? q.last].filter((v) => v !== undefined).length === 1, {
    message: 'Give one of term, fullname, id, email, or a name (first, middle, last)',
  });
export type ProfileSearchQuery = z.infer<typeof ProfileSearchQuery>;

const SearchList = z.array(AccountId).min(0).max(1000);

/**
 * `POST /profiles/search`: profiles by `ids` (sorted by id), or by the `emails` they hold
 * (`confirmedEmails`: confirmed ones only); each answer of an email search carries the address
 * it was found by in `email`. Exactly one of the three.
 */
export const ProfileSearchInput = z
  .strictObject({ ids: SearchList.optional(), emails: SearchList.optional(), confirmedEmails: SearchList.optional() })
  .refine((q) => [q.ids, q.emails, q.confirmedEmails].filter((v) => v !== undefined).length === 1, { message: 'Give one of ids, emails or confirmedEmails' });
export type ProfileSearchInput = z.infer<typeof ProfileSearchInput>;

export const ProfilesResult = z.strictObject({ profiles: z.array(Profile) });
export type ProfilesResult = z.infer<typeof ProfilesResult>;

/** A page of `GET /profiles/search`, and how many profiles match in all (the web client's pager). */
export const ProfileSearchResult = z.strictObject({ profiles: z.array(Profile), count: z.number().int().min(0) });
export type ProfileSearchResult = z.infer<typeof ProfileSearchResult>;
