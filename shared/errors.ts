import { z } from 'zod';

/**
 * The closed list of error names, with the HTTP status each one is sent with and when it is
 * thrown. Clients of this kind of service already switch on these names.
 */
export const ERROR_STATUS = {
  /** A value breaks a rule of its schema or of the operation. */
  ValidationError: 400,
  /** An object marked closed got a property it does not define. */
  AdditionalPropertiesError: 400,
  /** A required property is absent. */
  MissingRequiredError: 400,
  /** The request is malformed as a whole (bad JSON, wrong content type, bad credentials). */
  BadRequestError: 400,
  /** The operation needs a human-verification token and none, or a rejected one, was sent. */
  HumanVerificationRequiredError: 400,
  /** No valid session was presented. */
  UnauthorizedError: 401,
  /** The session's access token is past its expiry. */
  TokenExpiredError: 401,
  /** The caller is known but not allowed to do this. */
  ForbiddenError: 403,
  /** The resource or the route does not exist. */
  NotFoundError: 404,
  /** A write met another made at the same moment (a key both wrote); nothing was written, and sending it again may succeed. */
  ConflictError: 409,
  /** A `Range` outside the file. */
  RangeNotSatisfiableError: 416,
  /** The request body did not arrive in time. */
  RequestTimeoutError: 408,
  /** Too many requests, or too much work already queued. */
  TooManyError: 429,
  /** Anything unexpected; its details stay in the server's log. */
  InternalServerError: 500,
  /** A dependency (the database) is not answering. */
  ServiceUnavailableError: 503,
} as const;

export type ErrorName = keyof typeof ERROR_STATUS;

/**
 * The one status a name may carry besides its own: a value that is too large (a file over its
 * field's `maxSize`, a body over the limit) is a `ValidationError` with 413, as clients of this
 * kind of service expect.
 */
export const TOO_LARGE = 413;

/**
 * The statuses a protocol we speak gives its own meaning, sent with a name of the list: tus 1.0
 * (`/attachment/tus`) answers 409 for an offset that is not the upload's, 412 for another
 * protocol version, 415 for a body that is not `application/offset+octet-stream`, 423 while
 * another request writes the upload, and 460 for a checksum that does not match; HTTP itself
 * answers 412 for a failed precondition, 417 for an `Expect` the server does not meet and 431
 * for a request line and headers past the parser's limit (RFC 6585 §5, as Node answers).
 */
export type ProtocolStatus = typeof TOO_LARGE | 409 | 412 | 415 | 417 | 423 | 431 | 460;
export const ErrorNameSchema = z.enum(Object.keys(ERROR_STATUS) as [ErrorName, ...ErrorName[]]);

const errorItemShape = {
  status: z.int(),
  name: z.string(),
  message: z.string(),
  details: z.record(z.string(), z.unknown()).optional(),
};

export const ErrorItem = z.strictObject(errorItemShape);
export type ErrorItem = z.infer<typeof ErrorItem>;

/** One reason a request's value is refused, at `path`: a 400 `ValidationError` item (`AppError.fromItems` answers several). */
export function invalidAt(path: string, message: string): ErrorItem {
  return { status: 400, name: 'ValidationError', message, details: { path } };
}

/** The spec's Error body; `errors` is present only when the request failed for several reasons. */
export const ErrorBody = z.strictObject({ ...errorItemShape, errors: z.array(ErrorItem).optional() });
export type ErrorBody = z.infer<typeof ErrorBody>;

/** The one error class of the service: a name from the closed list, a message safe to show. */
export class AppError extends Error {
  override readonly name: ErrorName;
  readonly status: number;
  readonly details: Record<string, unknown> | undefined;
  readonly errors: ErrorItem[] | undefined;

  constructor(name: ErrorName, message: string, details?: Record<string, unknown>, errors?: ErrorItem[], status?: ProtocolStatus) {
    super(message);
    this.name = name;
    this.status = status ?? ERROR_STATUS[name];
    this.details = details;
    this.errors = errors && errors.length > 1 ? errors : undefined;
  }

  /** A value too large to accept: `ValidationError` with status 413. */
  static tooLarge(message: string, details?: Record<string, unknown>): AppError {
    return new AppError('ValidationError', message, details, undefined, TOO_LARGE);
  }

  /** A refusal a protocol gives a status of its own (`ProtocolStatus`). */
  static protocol(name: ErrorName, status: ProtocolStatus, message: string, details?: Record<string, unknown>): AppError {
    return new AppError(name, message, details, undefined, status);
  }

  /** Several problems at once: the first one heads the body, all of them are listed. */
  static fromItems(items: ErrorItem[]): AppError {
    const [first] = items;
    if (!first) return new AppError('ValidationError', 'Invalid request');
    return new AppError(ErrorNameSchema.catch('ValidationError').parse(first.name), first.message, first.details, items);
  }

  /**
   * The spec's Error body. `requestId` goes into `details.reqId`, as the real platform's errors
   * carry it, so a person can quote it and an operator find the request's log line.
   */
  toBody(requestId?: string): ErrorBody {
    const details = requestId ? { ...this.details, reqId: requestId } : this.details;
    return {
      status: this.status,
      name: this.name,
      message: this.message,
      ...(details ? { details } : {}),
      ...(this.errors ? { errors: this.errors } : {}),
    };
  }
}

type Issue = z.core.$ZodIssue;
type PathKey = PropertyKey;

/** `content/title/value`: the path a client shows next to the failing field. */
export function slashPath(path: readonly PathKey[]): string {
  return path.map(String).join('/');
}

function valueAt(input: unknown, path: readonly PathKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function describe(path: readonly PathKey[]): string {
  return path.length === 0 ? 'The body' : slashPath(path);
}

/**
 * Turns schema issues into Error items, one per failing field. `input` is what was parsed: it
 * tells a missing property (MissingRequiredError) from a wrong one (ValidationError) without
 * reading any message text.
 */
export function issuesToErrors(issues: readonly Issue[], input: unknown): ErrorItem[] {
  const items: ErrorItem[] = [];
  for (const issue of issues) {
    const path = issue.path as PathKey[];
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const keyPath = slashPath([...path, key]);
        items.push({
          status: 400,
          name: 'AdditionalPropertiesError',
          message: `The property ${keyPath} must NOT be present`,
          details: { path: keyPath },
        });
      }
      continue;
    }
    if (issue.code === 'invalid_type' && path.length > 0 && valueAt(input, path) === undefined) {
      items.push({
        status: 400,
        name: 'MissingRequiredError',
        message: `The property ${slashPath(path)} is required`,
        details: { path: slashPath(path) },
      });
      continue;
    }
    items.push({
      status: 400,
      name: 'ValidationError',
      message: `${describe(path)}: ${issue.message}`,
      details: { path: slashPath(path) },
    });
  }
  return items;
}

/** Parses `input` with `schema`, or throws one AppError listing every problem. */
export function parseOrThrow<T extends z.ZodType>(schema: T, input: unknown): z.output<T> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw AppError.fromItems(issuesToErrors(result.error.issues, input));
}
