/**
 * One page of a list, as `GET /notes` and `GET /groups` answer it: the items whose id is after
 * `after` (the web client's `getAllWithAfter`, on lists sorted by id), else from `offset`; at most `limit` (`fallback`
 * when none is given), or the whole rest when `stream` asks for it.
 */
export function pageOf<T extends { id: string }>(sorted: readonly T[], query: { after?: string | undefined; offset?: number | undefined; limit?: number | undefined; stream?: boolean | undefined }, fallback: number): T[] {
  const { after } = query;
  const from = after !== undefined ? sorted.filter((item) => item.id > after) : sorted.slice(query.offset ?? 0);
  return query.stream ? from : from.slice(0, query.limit ?? fallback);
}
