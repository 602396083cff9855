import { AppError } from '../../shared/errors.ts';
// The one rule for a name's words, which the profile form checks too.
import { joinedFullname, NAME_PART } from '../../shared/schemas/profile-edit.ts';

export interface NameInput {
  first?: string | null | undefined;
  middle?: string | null | undefined;
  last?: string | null | undefined;
  fullname?: string | null | undefined;
}

/** The name parts a tilde id is built from: first, middle, last; or the full name split on spaces. */
export function nameParts(name: NameInput): string[] {
  return namedParts(name).map((p) => p.part);
}

/** The parts with the field each came from, so an error can name it. */
function namedParts(name: NameInput): Array<{ part: string; field: string }> {
  const given = (['first', 'middle', 'last'] as const)
    .map((field) => ({ part: name[field]?.trim() ?? '', field }))
    .filter((p) => p.part !== '');
  if (given.length > 0) return given;
  return (name.fullname ?? '')
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map((part) => ({ part, field: 'fullname' }));
}

/**
 * `~First_Middle_Last`, without its number. Case is kept as typed; spaces inside a part become
 * underscores; hyphens, dots and letters of any script are kept.
 */
export function tildeBase(name: NameInput, pathPrefix = ''): string {
  const parts = namedParts(name);
  if (parts.length === 0) {
    throw new AppError('ValidationError', 'A name is required: give first and last, or fullname', { path: `${pathPrefix}fullname` });
  }
  for (const { part, field } of parts) {
    if (!NAME_PART.test(part)) {
      throw new AppError(
        'ValidationError',
        `The name ${part} is invalid. Only letters, single hyphens, single dots at the end of a name, and single spaces are allowed`,
        { path: `${pathPrefix}${field}` },
      );
    }
  }
  // NFC-composed, as every lookup composes the id it is given (`normaliseId`): `José` typed with a
  // combining accent is the same base as with a composed `é`, and counts on from its numbers.
  return `~${parts.map(({ part }) => part.replace(/ /g, '_')).join('_')}`.normalize('NFC');
}

/**
 * The name with its `fullname`: as given, or, when it gives none, its first, middle and last
 * joined by spaces. The real platform's clients read every name's `fullname` (the web client's
 * profile editor keeps only names that have one), while the Python client's own example of an
 * activation sends first and last alone.
 */
export function withFullname<T extends NameInput>(name: T): T {
  if (name.fullname?.trim()) return name;
  const fullname = joinedFullname(name);
  // Three parts at their longest (100 each) join past a full name's limit: then none is made up.
  return fullname && fullname.length <= FULLNAME_MAX ? { ...name, fullname } : name;
}

/** The longest full name a profile holds (`Name` in shared/schemas/profile.ts). */
const FULLNAME_MAX = 300;

/** The smallest integer ≥ 1 not in `used`. */
export function smallestFreeNumber(used: Iterable<number>): number {
  const taken = new Set(used);
  let n = 1;
  while (taken.has(n)) n += 1;
  return n;
}

/** Splits `~Ada_Lovelace12` into its base and number; null for anything else. */
export function splitUsername(username: string): { base: string; number: number } | null {
  const match = /^(~.+?)(\d+)$/u.exec(username);
  if (!match?.[1] || !match[2]) return null;
  return { base: match[1], number: Number(match[2]) };
}

/** What giving a name its username asks of the usernames' table. */
export interface UsernameTable {
  usedNumbers(base: string): Promise<number[]>;
  addUsername(profileId: string, base: string, number: number): Promise<string>;
}

/**
 * The username of a name without one (activation's and the profile form's rule): a spelling the
 * profile already holds gets its username back (clients post back the registration name without
 * one), unless another name of the same post took it; only a name new to the profile takes the
 * next free number of its base.
 */
export async function usernameForName(table: UsernameTable, profileId: string, owned: ReadonlySet<string>, base: string, taken: ReadonlySet<string | null | undefined>): Promise<string> {
  const kept = [...owned].sort().find((username) => splitUsername(username)?.base === base && !taken.has(username));
  return kept ?? table.addUsername(profileId, base, smallestFreeNumber(await table.usedNumbers(base)));
}
