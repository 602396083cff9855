/**
 * A time to the minute, in UTC ("2026-11-25 23:40 UTC"): the same on every screen and in every
 * mail, where the reader's own time zone is not known (pages localise it with a script).
 */
export function utcMinute(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
