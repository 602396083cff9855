/** The prefix of every metric of the service's own (Node's and the process's keep their usual names). */
export const PREFIX = 'peer_review_';

/** The route label of a request no route of the table took (a path never starts without `/`). */
export const UNMATCHED = 'unmatched';

/** How many applications get a `client` label of their own; tokens of any later one count under `other`. */
export const MAX_CLIENT_LABELS = 50;
export const OTHER_CLIENT = 'other';
