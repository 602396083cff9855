import { TRPCError } from '@trpc/server';
import knex from 'knex';
import type { TRPC_ERROR_CODE_KEY } from '@trpc/server/rpc';
import type { Logger } from 'pino';
import { AppError, issuesToErrors, type ErrorName } from '../shared/errors.ts';
import type { z } from 'zod';

/** HTTP status → the tRPC code that carries it, so tRPC answers with the same status as REST. */
const TRPC_CODE: Record<number, TRPC_ERROR_CODE_KEY> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  408: 'TIMEOUT',
  409: 'CONFLICT',
  412: 'PRECONDITION_FAILED',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  416: 'BAD_REQUEST',
  429: 'TOO_MANY_REQUESTS',
  500: 'INTERNAL_SERVER_ERROR',
  503: 'SERVICE_UNAVAILABLE',
};

/** tRPC's own errors → our names. Anything not listed is unexpected and becomes a 500. */
const FROM_TRPC_CODE: Partial<Record<TRPC_ERROR_CODE_KEY, ErrorName>> = {
  PARSE_ERROR: 'BadRequestError',
  BAD_REQUEST: 'BadRequestError',
  NOT_FOUND: 'NotFoundError',
  METHOD_NOT_SUPPORTED: 'BadRequestError',
  UNSUPPORTED_MEDIA_TYPE: 'BadRequestError',
  UNAUTHORIZED: 'UnauthorizedError',
  FORBIDDEN: 'ForbiddenError',
  TOO_MANY_REQUESTS: 'TooManyError',
};

function hasIssues(value: unknown): value is { issues: z.core.$ZodIssue[] } {
  return typeof value === 'object' && value !== null && Array.isArray((value as { issues?: unknown }).issues);
}

/**
 * Anything thrown → the AppError a client is shown. Schema failures list every field;
 * unexpected errors become a generic 500 and are logged with their stack, never sent.
 */
/** What a procedure threw, as its caller receives it: a TRPCError's cause, or the error itself. */
export function causeOf(error: unknown): unknown {
  return error instanceof TRPCError && error.cause ? error.cause : error;
}

export function toAppError(error: unknown, input: unknown, log?: Logger): AppError {
  const cause = causeOf(error);
  if (cause instanceof AppError) return cause;
  // Schema issues are the client's fault only on the way in; a failing output check is our bug.
  const isOutputCheck = error instanceof TRPCError && error.code === 'INTERNAL_SERVER_ERROR';
  if (hasIssues(cause) && !isOutputCheck) return AppError.fromItems(issuesToErrors(cause.issues, input));
  // tRPC's own reading of the input (a body past `maxBodySize`) fails inside the procedure call.
  const trpcError = cause instanceof TRPCError ? cause : error;
  if (trpcError instanceof TRPCError && trpcError.code === 'PAYLOAD_TOO_LARGE') return AppError.tooLarge('The request body is too large');
  if (error instanceof TRPCError) {
    // Raised by tRPC itself, outside any procedure: an unknown procedure, a malformed input.
    const name = FROM_TRPC_CODE[error.code];
    if (name) return new AppError(name, error.code === 'PARSE_ERROR' ? 'Malformed JSON input' : error.message);
  }
  const refused = refusedValue(cause);
  if (refused) {
    // A backstop: the request schemas should have refused the value before any statement ran.
    log?.warn({ err: cause }, 'a value the database cannot store reached it');
    return new AppError('ValidationError', refused);
  }
  if (isConflictingWrite(cause)) {
    // A backstop: every write that can race another checks first or handles its own; one that
    // lost a race no check saw (the same key written at once, a row it names deleted meanwhile)
    // wrote nothing, and is told so rather than given a 500.
    // Logged as an error all the same: a write that forgot its check refuses the same way.
    log?.error({ err: cause }, 'a write conflicted with another made at the same time');
    return new AppError('ConflictError', 'This conflicts with a change made at the same time. Please try again.');
  }
  if (isBusyDatabase(cause)) {
    // Another process (an admin command, a second server) held the write lock past the busy
    // timeout: nothing was written, and trying again shortly will do.
    log?.warn({ err: cause }, 'database busy');
    return new AppError('ServiceUnavailableError', 'The database is busy. Please try again in a moment.', { retryAfter: 1 });
  }
  if (isUnanswered(cause)) {
    // The file store (an S3-compatible one) or the database server did not answer, or said it
    // cannot now (a 5xx, S3's SlowDown): the request can succeed later, so it is a 503, not our bug.
    log?.warn({ err: cause }, 'a service the request needs did not answer');
    return new AppError('ServiceUnavailableError', 'A service this request needs is not answering. Please try again in a moment.', { retryAfter: 5 });
  }
  log?.error({ err: error }, 'unexpected error');
  return new AppError('InternalServerError', 'Internal server error');
}

/** The network's codes for a server that could not be reached: only a connection this process opens meets them. */
const UNREACHED_CODES = new Set(['ECONNREFUSED', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/** A connection cut: the client's own too (a body cut halfway), so counted only on the AWS SDK's errors. */
const CUT_CODES = new Set(['ECONNRESET', 'EPIPE']);

/** S3's 4xx answers that say "not now" rather than "not so": a request the store timed out, a conflicting operation under way. */
const RETRY_LATER_ERRORS = new Set(['RequestTimeout', 'OperationAborted']);

/**
 * A connection to another service (the file store, the database server) that failed, or an S3
 * store's answer that it cannot serve now: a 5xx, or one of `RETRY_LATER_ERRORS`. The AWS SDK
 * sets `$metadata` on its errors; any other 4xx from the store (access denied, a missing key) is
 * not this: that is a set-up or a bug.
 */
function isUnanswered(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, name, $metadata } = error as { code?: unknown; name?: unknown; $metadata?: { httpStatusCode?: unknown } };
  if (typeof code === 'string' && (UNREACHED_CODES.has(code) || ($metadata !== undefined && CUT_CODES.has(code)))) return true;
  if ($metadata !== undefined && typeof name === 'string' && RETRY_LATER_ERRORS.has(name)) return true;
  const status = $metadata?.httpStatusCode;
  return typeof status === 'number' && status >= 500;
}

/**
 * A unique key or a foreign key refused the statement: PostgreSQL's 23505 and 23503, SQLite's
 * constraint error naming either (its other constraints, `NOT NULL` and `CHECK`, are bugs).
 */
function isConflictingWrite(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (code === '23505' || code === '23503') return true;
  // The sqlite3 driver gives no extended codes (`SQLITE_CONSTRAINT_UNIQUE`): the constraint is named only in its message.
  return code === 'SQLITE_CONSTRAINT' && typeof message === 'string' && /\b(UNIQUE|FOREIGN KEY) constraint failed\b/.test(message);
}

/** The database could not take the work now (see `BUSY_CODES`); trying again shortly will do. */
function isBusyDatabase(error: unknown): boolean {
  // Every connection of the pool in use past Knex's acquire timeout (a flood on PostgreSQL).
  if (error instanceof knex.KnexTimeoutError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && BUSY_CODES.has(code);
}

/**
 * SQLite's busy and locked; PostgreSQL's lock timeout (55P03), serialization failure and
 * deadlock past their retries (40001, 40P01), statement timeout (57014), too many connections
 * (53300) and a server shutting down (57P01): in each, nothing was written.
 */
const BUSY_CODES = new Set(['SQLITE_BUSY', 'SQLITE_LOCKED', '55P03', '40001', '40P01', '57014', '53300', '57P01']);

/**
 * PostgreSQL's refusals of a value (SQLite stores any): what the client is told. Each failed a
 * statement, so its transaction was rolled back and nothing was written.
 */
const REFUSED_VALUES: Record<string, string> = {
  // A NUL character in text: PostgreSQL's text cannot hold one.
  '22021': 'The input contains a character that cannot be stored (U+0000)',
  '22P05': 'The input contains a character that cannot be stored',
  '22003': 'A number in the input is out of range',
  '22001': 'A value in the input is too long',
  // An indexed value past what an index entry holds (about 2.7 kB).
  '54000': 'A value in the input is too long',
  '22P02': 'A value in the input has the wrong form',
};

function refusedValue(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && Object.hasOwn(REFUSED_VALUES, code) ? REFUSED_VALUES[code] : undefined;
}

/** The TRPCError that carries an AppError with the matching code. */
export function toTRPCError(error: AppError): TRPCError {
  return new TRPCError({ code: TRPC_CODE[error.status] ?? 'INTERNAL_SERVER_ERROR', message: error.message, cause: error });
}
