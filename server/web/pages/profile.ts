/**
 * "Profile" (`/account/profile`): the person's names (each with its tilde id; the preferred one;
 * new ones), positions, links, relations, expertise and personal details, saved through
 * `accounts.updateProfile`, the procedure `POST /profiles` calls. Every rule is the procedure's
 * (`shared/schemas/profile-edit.ts`, `server/accounts/profile-editor.ts`); this file only turns
 * the form into a profile's content and back. Repeated rows are plain fields: the rows the
 * profile has and one empty row, and an "Add another …" button that shows the form again with one
 * more (no JavaScript needed). A row left empty is no entry.
 */
import type { Request, RequestHandler, Response } from 'express';
import {
  EditableProfileContent,
  PROFILE_LINK_KINDS,
  PROFILE_LINKS,
  type Name,
  type Profile,
  type ProfileEditorOptions,
  type UpdateProfileInput,
} from '../../../shared/index.ts';
import { DOB_CORRECTION_DAYS } from '../../accounts/profile-editor.ts';
import { PAGES_PREFIX } from '../../config.ts';
import { inFieldOrder } from '../form-errors.ts';
import { refusalOf, sendPage, type FieldError } from '../render.ts';
import { field, frame, isRefusal, redirect, type PageKit, type SignedInPage } from './kit.ts';

/** The repeated sections, their rows' fields (as the form names them), and the most rows a form may ask for. */
const SECTIONS = {
  names: ['first', 'middle', 'last'],
  history: ['position', 'institution', 'domain', 'start', 'end'],
  relations: ['relation', 'name', 'email', 'username', 'start', 'end'],
  expertise: ['keywords', 'start', 'end'],
} as const;
type Section = keyof typeof SECTIONS;
const MAX_ROWS = { names: 20, history: 50, relations: 100, expertise: 50 } satisfies Record<Section, number>;

/** Suggestions for a relation, a pronoun and a gender (free text is fine: these only help). */
const RELATIONS = ['PhD Advisor', 'PhD Student', 'Postdoc Advisor', 'Coauthor', 'Coworker', 'Colleague', 'Research Collaborator', 'Relative', 'Friend', 'Other'];
const PRONOUNS = ['she/her', 'he/him', 'they/them'];
const GENDERS = ['Female', 'Male', 'Non-binary', 'Prefer not to say'];

/** The form as typed: every field by its name, and how many rows each section shows. */
interface FormState {
  values: Record<string, string>;
  rows: Record<Section, number>;
  /** The usernames of the name rows that are the profile's names (shown as text, not inputs). */
  usernames: string[];
}

const yearText = (year: unknown) => (typeof year === 'number' ? String(year) : '');
/** A year as typed: a number when it is four digits, '' when empty, else the text (which the schema refuses in words). */
const yearOf = (text: string): number | string => (/^\d{4}$/.test(text) ? Number(text) : text);

/** The form filled in from the stored profile, with one empty row per section to add to. */
function stateOf(profile: Profile): FormState {
  const c = profile.content;
  const values: Record<string, string> = {};
  const names = c.names ?? [];
  names.forEach((n, i) => {
    values[`names-${i}-username`] = n.username ?? '';
    if (n.preferred) values.preferred = String(i);
  });
  (c.history ?? []).forEach((h, i) => {
    Object.assign(values, { [`history-${i}-position`]: h.position, [`history-${i}-institution`]: h.institution.name ?? '', [`history-${i}-domain`]: h.institution.domain, [`history-${i}-start`]: yearText(h.start), [`history-${i}-end`]: yearText(h.end) });
  });
  (c.relations ?? []).forEach((r, i) => {
    Object.assign(values, { [`relations-${i}-relation`]: r.relation, [`relations-${i}-name`]: r.name, [`relations-${i}-email`]: r.email ?? '', [`relations-${i}-username`]: r.username ?? '', [`relations-${i}-start`]: yearText(r.start), [`relations-${i}-end`]: yearText(r.end) });
  });
  (c.expertise ?? []).forEach((e, i) => {
    Object.assign(values, { [`expertise-${i}-keywords`]: (e.keywords ?? []).join(', '), [`expertise-${i}-start`]: yearText(e.start), [`expertise-${i}-end`]: yearText(e.end) });
  });
  for (const kind of PROFILE_LINK_KINDS) values[kind] = c[kind] ?? '';
  Object.assign(values, { pronouns: c.pronouns ?? '', gender: c.gender ?? '', yearOfBirth: yearText(c.yearOfBirth) });
  return {
    values,
    rows: { names: names.length + 1, history: (c.history?.length ?? 0) + 1, relations: (c.relations?.length ?? 0) + 1, expertise: (c.expertise?.length ?? 0) + 1 },
    usernames: names.map((n) => n.username ?? ''),
  };
}

/** The form as posted. The name rows that are the profile's own carry their username (hidden). */
function stateFrom(req: Request): FormState {
  const count = (section: Section) => Math.min(MAX_ROWS[section] + 1, Math.max(1, Number.parseInt(field(req, `${section}-rows`), 10) || 1));
  const rows = { names: count('names'), history: count('history'), relations: count('relations'), expertise: count('expertise') };
  const values: Record<string, string> = {};
  const take = (name: string) => {
    values[name] = field(req, name).trim();
  };
  for (const section of Object.keys(SECTIONS) as Section[]) {
    for (let i = 0; i < rows[section]; i += 1) for (const part of SECTIONS[section]) take(`${section}-${i}-${part}`);
  }
  for (let i = 0; i < rows.names; i += 1) {
    take(`names-${i}-username`);
    take(`names-${i}-remove`);
  }
  for (const name of [...PROFILE_LINK_KINDS, 'pronouns', 'gender', 'yearOfBirth', 'preferred']) take(name);
  return { values, rows, usernames: Array.from({ length: rows.names }, (_, i) => values[`names-${i}-username`] ?? '') };
}

/**
 * The content the form says, and where each entry came from (its row), so that a refusal's path
 * (`content/history/1/start`) finds its input. What the form does not show (the date of birth
 * beyond its year, `isMinor`, `isOver18`) is the stored profile's.
 */
function contentOf(state: FormState, profile: Profile): { content: Record<string, unknown>; rowOf: Record<Section, number[]> } {
  const v = (name: string) => state.values[name] ?? '';
  const rowOf: Record<Section, number[]> = { names: [], history: [], relations: [], expertise: [] };
  const filled = (section: Section, i: number) => SECTIONS[section].some((part) => v(`${section}-${i}-${part}`) !== '');
  const stored = new Map((profile.content.names ?? []).map((n) => [n.username ?? '', n]));
  const names: Name[] = [];
  for (let i = 0; i < state.rows.names; i += 1) {
    const username = v(`names-${i}-username`);
    const preferred = v('preferred') === String(i);
    const own = username ? stored.get(username) : undefined;
    if (own) {
      if (v(`names-${i}-remove`) === '') {
        rowOf.names.push(i);
        names.push({ ...own, preferred });
      }
    } else if (filled('names', i)) {
      rowOf.names.push(i);
      const [first, middle, last] = SECTIONS.names.map((part) => v(`names-${i}-${part}`));
      names.push({ first, middle, last, preferred });
    }
  }
  const rows = <T>(section: Section, make: (i: number) => T): T[] => {
    const made: T[] = [];
    for (let i = 0; i < state.rows[section]; i += 1) {
      if (!filled(section, i)) continue;
      rowOf[section].push(i);
      made.push(make(i));
    }
    return made;
  };
  const period = (section: Section, i: number) => ({ start: yearOf(v(`${section}-${i}-start`)), ...(v(`${section}-${i}-end`) ? { end: yearOf(v(`${section}-${i}-end`)) } : {}) });
  // What the form has no input for (an institution's country, city, department; a relation's
  // readers, which a client may have posted) is kept from the row the form showed at that place,
  // while it is still about the same institution or person: saving the page loses nothing.
  const shownHistory = profile.content.history ?? [];
  const shownRelations = profile.content.relations ?? [];
  const history = rows('history', (i) => {
    const domain = v(`history-${i}-domain`);
    const { name: _name, domain: _domain, ...unseen } = shownHistory[i]?.institution.domain === domain ? shownHistory[i].institution : { name: '', domain: '' };
    return { position: v(`history-${i}-position`), institution: { ...unseen, name: v(`history-${i}-institution`), domain }, ...period('history', i) };
  });
  const relations = rows('relations', (i) => {
    const name = v(`relations-${i}-name`);
    const readers = shownRelations[i]?.name === name ? shownRelations[i].readers : undefined;
    return { relation: v(`relations-${i}-relation`), name, email: v(`relations-${i}-email`), username: v(`relations-${i}-username`), ...period('relations', i), ...(readers ? { readers } : {}) };
  });
  const expertise = rows('expertise', (i) => ({ keywords: v(`expertise-${i}-keywords`).split(',').map((k) => k.trim()).filter(Boolean), ...period('expertise', i) }));
  const kept = profile.content;
  const yearOfBirth = v('yearOfBirth');
  const content: Record<string, unknown> = {
    names,
    history,
    relations,
    expertise,
    ...Object.fromEntries(PROFILE_LINK_KINDS.map((kind) => [kind, v(kind)])),
    pronouns: v('pronouns'),
    gender: v('gender'),
    ...(yearOfBirth ? { yearOfBirth: /^\d+$/.test(yearOfBirth) ? Number(yearOfBirth) : yearOfBirth } : {}),
    ...(kept.dob !== undefined ? { dob: kept.dob } : {}),
    ...(kept.isMinor !== undefined ? { isMinor: kept.isMinor } : {}),
    ...(kept.isOver18 !== undefined ? { isOver18: kept.isOver18 } : {}),
  };
  return { content, rowOf };
}

/** A refusal's path as the input it is about. */
function fieldFor(rowOf: Record<Section, number[]>, state: FormState) {
  return (at: string): string => {
    const parts = at.replace(/^content\//, '').split('/');
    const [head = '', index, ...rest] = parts;
    if (head in SECTIONS && index !== undefined && /^\d+$/.test(index)) {
      const section = head as Section;
      const row = rowOf[section][Number(index)] ?? 0;
      if (section === 'names') return state.usernames[row] ? `names-${row}-preferred` : `names-${row}-${rest[0] === 'middle' || rest[0] === 'last' ? rest[0] : 'first'}`;
      if (section === 'history' && rest[0] === 'institution') return `history-${row}-${rest[1] === 'domain' ? 'domain' : 'institution'}`;
      return `${section}-${row}-${rest[0] ?? SECTIONS[section][0]}`;
    }
    if (head in SECTIONS) return head;
    if (['dob', 'isMinor', 'isOver18'].includes(head)) return 'yearOfBirth';
    return head;
  };
}

/** Every input's id in the order the page shows them: errors are listed in this order. */
function fieldOrder(state: FormState): string[] {
  const ids: string[] = ['names'];
  for (let i = 0; i < state.rows.names; i += 1) ids.push(`names-${i}-preferred`, ...SECTIONS.names.map((p) => `names-${i}-${p}`));
  ids.push('history');
  for (let i = 0; i < state.rows.history; i += 1) ids.push(...SECTIONS.history.map((p) => `history-${i}-${p}`));
  ids.push(...PROFILE_LINK_KINDS, 'relations');
  for (let i = 0; i < state.rows.relations; i += 1) ids.push(...SECTIONS.relations.map((p) => `relations-${i}-${p}`));
  ids.push('expertise');
  for (let i = 0; i < state.rows.expertise; i += 1) ids.push(...SECTIONS.expertise.map((p) => `expertise-${i}-${p}`));
  ids.push('pronouns', 'gender', 'yearOfBirth');
  return ids;
}

/** Errors in the order the page shows its inputs (`form-errors.ts`), one per input. */
function inPageOrder(errors: FieldError[], state: FormState): FieldError[] {
  return inFieldOrder(errors, fieldOrder(state).map((id) => ({ id })));
}

export function profilePages(kit: PageKit) {
  const { signedIn } = kit;

  const show = (req: Request, res: Response, page: SignedInPage, status: number, profile: Profile, options: ProfileEditorOptions, state: FormState, errors?: FieldError[], previews: Record<number, string> = {}) => {
    const stored = new Map((profile.content.names ?? []).map((n) => [n.username ?? '', n]));
    const names = Array.from({ length: state.rows.names }, (_, i) => {
      const username = state.usernames[i] ?? '';
      const own = username ? stored.get(username) : undefined;
      return { i, username: own ? username : '', fullname: own?.fullname ?? '', removable: own !== undefined && username !== profile.id, preview: previews[i] ?? '' };
    });
    sendPage(res, status, 'profile', {
      ...frame(req, page, 'Profile', { errors, wide: true }),
      profileId: profile.id,
      values: state.values,
      rows: state.rows,
      names,
      links: PROFILE_LINK_KINDS.map((kind) => ({ kind, ...PROFILE_LINKS[kind] })),
      positions: options.positions,
      institutions: options.institutions,
      relations: RELATIONS,
      pronouns: PRONOUNS,
      genders: GENDERS,
      dobDays: DOB_CORRECTION_DAYS,
      hasDob: profile.content.dob !== undefined,
    });
  };

  const load = async (page: SignedInPage): Promise<{ profile: Profile; options: ProfileEditorOptions }> => {
    const [{ profiles }, options] = await Promise.all([page.caller.accounts.profiles(), page.caller.accounts.profileEditorOptions()]);
    const [profile] = profiles;
    // `GET /profiles` without parameters always answers the caller's own profile.
    if (!profile) throw new Error('the signed-in person has no profile');
    return { profile, options };
  };

  const webProfileForm = signedIn(async (req, res, page) => {
    const { profile, options } = await load(page);
    show(req, res, page, 200, profile, options, stateOf(profile));
  });

  const webProfile = signedIn(
    async (req, res, page) => {
      const { profile, options } = await load(page);
      const state = stateFrom(req);
      const intent = field(req, 'intent');
      const more = /^add-(names|history|relations|expertise)$/.exec(intent)?.[1] as Section | undefined;
      if (more) {
        state.rows[more] = Math.min(MAX_ROWS[more], state.rows[more] + 1);
        show(req, res, page, 200, profile, options, state);
        return;
      }
      if (intent === 'preview-names') {
        // Each new name's profile id as it would be given now (`accounts.tildeUsername`, the
        // activation page's "Show the profile ids"): nothing is saved or reserved.
        const previews: Record<number, string> = {};
        for (let i = 0; i < state.rows.names; i += 1) {
          if (state.usernames[i]) continue;
          const [first = '', middle = '', last = ''] = (['first', 'middle', 'last'] as const).map((part) => state.values[`names-${i}-${part}`] ?? '');
          if (!first && !last) continue;
          try {
            previews[i] = (await page.caller.accounts.tildeUsername({ first, ...(middle ? { middle } : {}), last })).username;
          } catch (error) {
            if (!isRefusal(error)) throw error;
            previews[i] = '';
          }
        }
        show(req, res, page, 200, profile, options, state, undefined, previews);
        return;
      }
      const { content, rowOf } = contentOf(state, profile);
      const fieldOf = fieldFor(rowOf, state);
      // The procedure's own schema, read first so that its words are shown as they are (the API
      // prefixes them with the path, which the page shows by placing them at their input).
      const checked = EditableProfileContent.safeParse(content);
      if (!checked.success) {
        const errors = checked.error.issues.map((issue) => ({ field: fieldOf(['content', ...issue.path.map(String)].join('/')), message: issue.message }));
        show(req, res, page, 400, profile, options, state, inPageOrder(errors, state));
        return;
      }
      try {
        await page.caller.accounts.updateProfile({ signatures: [profile.id], content: content as UpdateProfileInput['content'] });
      } catch (error) {
        const refusal = refusalOf(req, error, fieldOf);
        show(req, res, page, refusal.status, profile, options, state, inPageOrder(refusal.errors, state));
        return;
      }
      redirect(res, `${PAGES_PREFIX}/profile`, 'profile-saved');
    },
    { post: true },
  );

  return { webProfileForm, webProfile } satisfies Record<string, RequestHandler>;
}
