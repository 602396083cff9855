/**
 * Editing a profile (`accounts.updateProfile`, `POST /profiles`, the page `/account/profile`):
 * what a person may put in each field of `ProfileContent`, checked here once for the page, the
 * typed client and the REST path alike. Each link is checked for its kind (an ORCID iD with its
 * checksum, a Google Scholar profile, …) by `checkProfileLink`, which the page's hints describe.
 * Every message is a sentence a person can act on; a refusal names the field's path
 * (`content/orcid`, `content/history/0/institution/domain`).
 */
import { z } from 'zod';
import { NonEmptyString } from './common.ts';
import { ProfileReference } from './profile.ts';

// ---- links, one check per kind -------------------------------------------------------------------

/** The links a profile holds, in the order the page shows them. */
export const PROFILE_LINK_KINDS = ['homepage', 'dblp', 'orcid', 'gscholar', 'semanticScholar', 'aclanthology', 'linkedin', 'wikipedia'] as const;
export type ProfileLinkKind = (typeof PROFILE_LINK_KINDS)[number];

/** Each kind's name and the example its hint and its error show. */
export const PROFILE_LINKS: Record<ProfileLinkKind, { label: string; example: string }> = {
  homepage: { label: 'Homepage', example: 'https://www.example.org/~ada' },
  dblp: { label: 'DBLP', example: 'https://dblp.org/pid/12/3456' },
  orcid: { label: 'ORCID', example: 'https://orcid.org/0000-0002-1825-0097' },
  gscholar: { label: 'Google Scholar', example: 'https://scholar.google.com/citations?user=AbCdEfGhIjK' },
  semanticScholar: { label: 'Semantic Scholar', example: 'https://www.semanticscholar.org/author/1741101' },
  aclanthology: { label: 'ACL Anthology', example: 'https://aclanthology.org/people/a/ada-lovelace/' },
  linkedin: { label: 'LinkedIn', example: 'https://www.linkedin.com/in/ada-lovelace' },
  wikipedia: { label: 'Wikipedia', example: 'https://en.wikipedia.org/wiki/Ada_Lovelace' },
};

const MAX_LINK = 1000;
const ORCID_ID = /^\d{4}-\d{4}-\d{4}-\d{3}[\dX]$/;

/** Whether an ORCID iD's last character is its ISO 7064 MOD 11-2 check digit. */
export function isOrcidChecksumValid(id: string): boolean {
  const digits = id.replaceAll('-', '');
  let total = 0;
  for (const c of digits.slice(0, 15)) total = (total + Number(c)) * 2;
  const result = (12 - (total % 11)) % 11;
  return digits[15] === (result === 10 ? 'X' : String(result));
}

/** `rest` is a non-empty path segment after `prefix` (`/author/` + an id). */
const under = (path: string, prefix: string) => path.startsWith(prefix) && path.length > prefix.length && path.slice(prefix.length) !== '/';
const hostIs = (host: string, ...names: string[]) => names.includes(host) || names.some((name) => host === `www.${name}`);

/** A web address as a browser reads it, or null: `http:` or `https:`, a host, no user name or password. */
function webUrl(value: string): URL | null {
  // No scheme (`dblp.org/pid/1/2`) is read as https, as a browser's address bar does.
  const withScheme = /^[a-z][a-z0-9+.-]*:/i.test(value) ? value : `https://${value}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  if (url.username !== '' || url.password !== '' || !url.hostname.includes('.')) return null;
  return url;
}

/** Whether a parsed address is a link of this kind (the host and path each site gives its profiles). */
function fitsKind(kind: Exclude<ProfileLinkKind, 'orcid'>, url: URL): boolean {
  const host = url.hostname.toLowerCase();
  const path = url.pathname;
  switch (kind) {
    case 'homepage':
      return true;
    case 'dblp':
      return (hostIs(host, 'dblp.org') || host === 'dblp.uni-trier.de') && path.length > 1;
    case 'gscholar':
      return /^scholar\.google\.[a-z]{2,3}(?:\.[a-z]{2})?$/.test(host) && path === '/citations' && (url.searchParams.get('user') ?? '') !== '';
    case 'semanticScholar':
      return hostIs(host, 'semanticscholar.org') && under(path, '/author/');
    case 'aclanthology':
      return hostIs(host, 'aclanthology.org') && under(path, '/people/');
    case 'linkedin':
      return (host === 'linkedin.com' || host.endsWith('.linkedin.com')) && under(path, '/in/');
    case 'wikipedia':
      return /^(?:[a-z0-9-]+\.)+wikipedia\.org$/.test(host) && under(path, '/wiki/');
    default: {
      const unreachable: never = kind;
      return unreachable;
    }
  }
}

export type LinkCheck = { ok: true; value: string } | { ok: false; message: string };

/**
 * A profile link checked for its kind: the value to store (trimmed; an ORCID iD as its
 * `https://orcid.org/…` address; an address typed without a scheme with `https://`), or what is
 * wrong with it in plain words.
 */
export function checkProfileLink(kind: ProfileLinkKind, raw: string): LinkCheck {
  const value = raw.trim();
  const { label, example } = PROFILE_LINKS[kind];
  const wrong = (what: string): LinkCheck => ({ ok: false, message: `${what}, such as ${example}` });
  if (value.length > MAX_LINK) return { ok: false, message: `Use at most ${MAX_LINK} characters for the ${label} link` };
  if (kind === 'orcid') {
    const bare = value.toUpperCase();
    const id = ORCID_ID.test(bare) ? bare : orcidOf(value);
    if (id === null) return wrong('Enter your ORCID iD or its address');
    if (!isOrcidChecksumValid(id)) return { ok: false, message: `${id} is not an ORCID iD: its last character does not match (check for a mistyped digit)` };
    return { ok: true, value: `https://orcid.org/${id}` };
  }
  const url = webUrl(value);
  if (!url) return wrong(kind === 'homepage' ? 'Enter a web address' : `Enter the address of your ${label} page`);
  if (!fitsKind(kind, url)) return wrong(`Enter the address of your ${label} page`);
  return { ok: true, value: /^[a-z][a-z0-9+.-]*:/i.test(value) ? value : `https://${value}` };
}

/** The iD of an `orcid.org/<iD>` address, or null. */
function orcidOf(value: string): string | null {
  const url = webUrl(value);
  if (!url || !hostIs(url.hostname.toLowerCase(), 'orcid.org')) return null;
  const id = url.pathname.replace(/^\/|\/$/g, '').toUpperCase();
  return ORCID_ID.test(id) ? id : null;
}

/** A link of one kind: checked and normalised; empty is no link. */
const linkOf = (kind: ProfileLinkKind) =>
  z
    .string({ error: `The ${PROFILE_LINKS[kind].label} link must be text` })
    .transform((given, ctx) => {
      if (given.trim() === '') return undefined;
      const checked = checkProfileLink(kind, given);
      if (checked.ok) return checked.value;
      ctx.addIssue({ code: 'custom', message: checked.message });
      return z.NEVER;
    })
    .optional();

// ---- the other fields --------------------------------------------------------------------------

const text = (max: number, what: string) => z.string({ error: `${what} must be text` }).trim().max(max, `Use at most ${max} characters for ${what}`);
const required = (max: number, what: string, missing: string) => text(max, what).min(1, missing);
/** Optional text: blank is left out. */
const optionalText = (max: number, what: string) =>
  text(max, what)
    .transform((value) => (value === '' ? undefined : value))
    .optional();

const YEAR_MESSAGE = 'Enter a year between 1900 and 2099 (four digits), or leave it empty';
/** A year of a history, relation or expertise entry (the spec's: 1900–2099, null or empty). */
export const EditYear = z.union([z.int().min(1900).max(2099), z.null(), z.literal('')], { error: YEAR_MESSAGE });
const yearValue = (year: number | null | '' | undefined) => (typeof year === 'number' ? year : null);

/** `end` needs a `start` and comes after it: the issue is the end's. */
function checkPeriod(entry: { start?: number | null | '' | undefined; end?: number | null | '' | undefined }, ctx: z.RefinementCtx): void {
  const start = yearValue(entry.start);
  const end = yearValue(entry.end);
  if (end !== null && start === null) ctx.addIssue({ code: 'custom', path: ['start'], message: 'Enter the year it started, since it has an end' });
  else if (end !== null && start !== null && end < start) ctx.addIssue({ code: 'custom', path: ['end'], message: 'The end year cannot be before the start year' });
}

/**
 * A word of a name: letters of any script (with their marks), ending in one dot at most, words
 * separated by a single space or hyphen: the rule every name's parts follow, so that it has a
 * tilde id (`server/accounts/tilde.ts` builds it; sign-up, activation and the profile form check it).
 */
export const NAME_PART = /^[\p{L}\p{M}]+\.?(?:[ -][\p{L}\p{M}]+\.?)*$/u;
const NAME_PART_MESSAGE = 'Use letters, single spaces or hyphens, and a dot only at the end of a word';

/**
 * One name. A name that has a username (its tilde id) keeps it: the service checks that it is
 * the profile's and that the name still spells it. A new name (no username) gets its tilde id
 * when saved, so its parts must be ones a tilde id can be made of.
 */
export const EditableName = z
  .strictObject({
    preferred: z.boolean().optional(),
    first: text(100, 'the first name').nullable().optional(),
    middle: text(100, 'the middle name').nullable().optional(),
    last: text(100, 'the last name').nullable().optional(),
    fullname: text(300, 'the full name').optional(),
    username: text(300, 'the profile id').nullable().optional(),
  })
  .superRefine((name, ctx) => {
    const parts = (['first', 'middle', 'last'] as const).filter((key) => (name[key] ?? '') !== '');
    if (parts.length === 0 && (name.fullname ?? '') === '') {
      ctx.addIssue({ code: 'custom', path: ['first'], message: 'Enter the name: a first or a last name' });
      return;
    }
    if (name.username) return;
    for (const key of parts) {
      if (!NAME_PART.test(name[key] ?? '')) ctx.addIssue({ code: 'custom', path: [key], message: NAME_PART_MESSAGE });
    }
    if (parts.length === 0 && !(name.fullname ?? '').split(/\s+/).every((word) => NAME_PART.test(word))) {
      ctx.addIssue({ code: 'custom', path: ['fullname'], message: NAME_PART_MESSAGE });
    }
  })
  .transform((name) => {
    const { username, ...rest } = name;
    const fullname = name.fullname || joinedFullname(name);
    return { ...rest, fullname, ...(username ? { username } : {}) };
  });
export type EditableName = z.output<typeof EditableName>;

/** A name's full name from its parts: first, middle and last, each trimmed, joined by spaces. */
export function joinedFullname(name: { first?: string | null | undefined; middle?: string | null | undefined; last?: string | null | undefined }): string {
  return [name.first, name.middle, name.last].map((part) => part?.trim()).filter(Boolean).join(' ');
}

/** An institution's domain as its email addresses have it: `mit.edu`, `cs.ox.ac.uk`. */
const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

export const EditableInstitution = z.strictObject({
  name: optionalText(300, 'the institution’s name'),
  domain: required(300, 'the domain', 'Enter the institution’s domain, such as mit.edu')
    .toLowerCase()
    .regex(DOMAIN, 'Enter a domain such as mit.edu: the part of its email addresses after the @'),
  country: optionalText(300, 'the country').nullable(),
  stateProvince: optionalText(300, 'the state or province').nullable(),
  city: optionalText(300, 'the city').nullable(),
  department: optionalText(300, 'the department').nullable(),
});

export const EditableHistoryEntry = z
  .strictObject({
    position: required(300, 'the position', 'Enter the position'),
    institution: EditableInstitution,
    start: EditYear,
    end: EditYear.optional(),
  })
  .superRefine(checkPeriod);

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const TILDE_ID = /^~\S+\d+$/;

export const EditableRelation = z
  .strictObject({
    relation: required(300, 'the relation', 'Enter the relation, such as PhD advisor'),
    name: required(300, 'the name', 'Enter the person’s name'),
    email: optionalText(254, 'the email').refine((v) => v === undefined || EMAIL.test(v), 'Enter an email address such as ada@example.org'),
    username: optionalText(300, 'the profile id').refine((v) => v === undefined || TILDE_ID.test(v), 'Enter a profile id such as ~Ada_Lovelace1'),
    start: EditYear.optional(),
    end: EditYear.optional(),
    readers: z.array(NonEmptyString.max(300)).max(20).optional(),
  })
  .superRefine((relation, ctx) => {
    if (relation.email === undefined && relation.username === undefined) ctx.addIssue({ code: 'custom', path: ['email'], message: 'Enter the person’s email or profile id' });
    checkPeriod(relation, ctx);
  });

export const EditableExpertise = z
  .strictObject({
    keywords: z
      .array(required(300, 'a keyword', 'Enter a keyword'), { error: 'Keywords must be a list' })
      .min(1, 'Enter at least one keyword')
      .max(50, 'Use at most 50 keywords per line')
      .nullable(),
    start: EditYear,
    end: EditYear.optional(),
  })
  .superRefine(checkPeriod);

/** The earliest date of birth a profile may hold (1900-01-01, in ms; negative before 1970). */
const FIRST_DOB = Date.UTC(1900, 0, 1);

const links = Object.fromEntries(PROFILE_LINK_KINDS.map((kind) => [kind, linkOf(kind)])) as { [K in ProfileLinkKind]: ReturnType<typeof linkOf> };

/**
 * What an edit holds: every field of the spec's `ProfileContent` (a client posts back what it
 * read). `names` replace the profile's names (at least one); `history`, `relations`,
 * `expertise`, the links and the personal fields replace theirs (left out: removed). `emails`
 * and `preferredEmail` are read as the web client's profile editor sends them: another of the
 * profile's confirmed addresses as `preferredEmail` is made preferred, and an unconfirmed address
 * of the profile's missing from a given `emails` is removed (a confirmed one is kept: the list may
 * be older than it), each by the emails' own procedures and their rules
 * (`accounts.setPreferredEmail`, `accounts.removeEmail`); an address the profile does not hold
 * is ignored (adding one takes its confirmation code), as is `emailsConfirmed`. `yearOfBirth`, `dob`, `isMinor` and
 * `isOver18` are the date of birth, which the service lets its owner correct only for a while
 * (`server/accounts/profile-editor.ts`).
 */
export const EditableProfileContent = z
  .strictObject({
    names: z.array(EditableName, { error: 'Names must be a list' }).min(1, 'A profile needs at least one name').max(20, 'Use at most 20 names'),
    yearOfBirth: z.int({ error: 'Enter your year of birth as four digits, such as 1990' }).min(1900, 'Enter a year of birth from 1900 on').max(2100, 'Enter a year of birth that has come').optional(),
    dob: z.int({ error: 'The date of birth must be a time in milliseconds' }).min(FIRST_DOB, 'Enter a date of birth from 1900 on').max(9_999_999_999_999, 'Enter a date of birth that has come').optional(),
    isMinor: z.boolean().optional(),
    isOver18: z.boolean().optional(),
    preferredEmail: z.string().max(254).optional(),
    emails: z.array(z.string().max(254)).optional(),
    emailsConfirmed: z.array(z.string().max(254)).optional(),
    gender: optionalText(100, 'gender').nullable(),
    pronouns: optionalText(50, 'pronouns'),
    ...links,
    history: z.array(EditableHistoryEntry).max(50, 'Use at most 50 positions').nullable().optional(),
    relations: z.array(EditableRelation).max(100, 'Use at most 100 relations').nullable().optional(),
    expertise: z.array(EditableExpertise).max(50, 'Use at most 50 lines of expertise').nullable().optional(),
  })
  .superRefine((content, ctx) => {
    if (content.names.filter((name) => name.preferred).length > 1) ctx.addIssue({ code: 'custom', path: ['names'], message: 'Choose one preferred name' });
    const seen = new Set<string>();
    content.names.forEach((name, i) => {
      if (!name.username) return;
      if (seen.has(name.username)) ctx.addIssue({ code: 'custom', path: ['names', i, 'username'], message: `${name.username} is listed twice` });
      seen.add(name.username);
    });
    if (content.dob !== undefined && content.yearOfBirth !== undefined && new Date(content.dob).getUTCFullYear() !== content.yearOfBirth) {
      ctx.addIssue({ code: 'custom', path: ['yearOfBirth'], message: 'The year of birth must be the year of the date of birth' });
    }
  });
export type EditableProfileContent = z.output<typeof EditableProfileContent>;

/**
 * `accounts.updateProfile`, `POST /profiles`: the spec's `ProfileReference`, whose `content`
 * is required and checked as `EditableProfileContent`. `id` (or `referent`) names the profile,
 * the caller's own when left out. Everything else a client posts back from what it read
 * (`signatures`, `invitation`, `readers`, `writers`, `nonreaders`, `metaContent`, `tcdate`,
 * `tmdate`, `ddate`, `state`, `pastStates`, `dobTimestamp`, …) is accepted and ignored: who may
 * edit is decided by the session, and the service keeps no per-field record of who wrote what.
 */
export const UpdateProfileInput = ProfileReference.omit({ content: true })
  .extend({ content: EditableProfileContent })
  .refine((input) => input.id === undefined || input.referent === undefined || input.id === input.referent, {
    path: ['referent'],
    message: 'id and referent name different profiles',
  });
export type UpdateProfileInput = z.input<typeof UpdateProfileInput>;

/** What the profile page offers: the positions and the institutions (with their domains). */
export const ProfileEditorOptions = z.strictObject({
  positions: z.array(z.string()),
  institutions: z.array(z.strictObject({ domain: z.string(), name: z.string(), country: z.string().nullable() })),
});
export type ProfileEditorOptions = z.infer<typeof ProfileEditorOptions>;
