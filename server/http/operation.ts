import type { z } from 'zod';

/** One operation as the document shows it. */
export interface Operation {
  method: 'get' | 'post' | 'put' | 'delete' | 'head' | 'patch' | 'options';
  /** Express syntax, as it is registered. */
  path: string;
  tag: string;
  summary: string;
  /** `required`: 401 without a session; `optional`: a session changes the answer (an expired one is a 401). */
  session: 'required' | 'optional' | 'none';
  pathParams?: z.ZodObject;
  query?: z.ZodType;
  headers?: z.ZodObject;
  body?: { json: z.ZodType } | { multipart: z.ZodObject; file: string } | { form: z.ZodObject };
  /** The answer on success: JSON of a schema (200, or `status`), nothing (204), an HTML page, or a file (with ranges and ETags). */
  answer: { json: z.ZodType; status?: 201 } | { empty: 200 | 204 } | { html: true } | { file: string[] };
  /** The JSON answer is the same text until the service changes: it carries an ETag, and a request naming it with `If-None-Match` gets a 304. */
  etag?: true;
  /**
   * `oauth`: errors are OAuth's JSON (`error`, `error_description`; RFC 6749 §5.2), not the Error
   * body; `page`: a person's browser is answered, so an error is an HTML page saying what went
   * wrong (with the request id to quote). Either way, what the service answers before any route
   * (a malformed URL, a body too large) stays the Error body.
   */
  errorBody?: 'oauth' | 'page';
  /** Error statuses besides the ones `errorStatuses` adds for every operation of its kind. */
  errors?: number[];
}
