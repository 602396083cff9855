import type { NextFunction, Request, Response } from 'express';
import { AppError } from '../../shared/errors.ts';
import { toAppError } from '../errors.ts';

/** Errors raised by express.json() carry a `type`; that, not the message text, says what failed. */
function bodyParserError(error: unknown): AppError | null {
  const type = (error as { type?: unknown } | null)?.type;
  switch (type) {
    case 'entity.parse.failed':
      return new AppError('BadRequestError', 'Malformed JSON body');
    case 'entity.too.large':
      return AppError.tooLarge('The request body is too large');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new AppError('BadRequestError', 'Unsupported body encoding');
    case 'request.aborted':
      return new AppError('BadRequestError', 'The request was aborted');
    default:
      return null;
  }
}

/** Sends any error as the spec's Error body. */
export function sendError(res: Response, error: unknown, input?: unknown): void {
  const app = bodyParserError(error) ?? toAppError(error, input, res.req.log);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  // A client told how long to wait (the Python client honours it) need not guess with backoff.
  const retryAfter = app.details?.retryAfter;
  if (typeof retryAfter === 'number') res.setHeader('Retry-After', String(retryAfter));
  res.status(app.status).json(app.toBody(String(res.req.id)));
}

/** The last middleware: whatever reached Express's error path leaves as an Error body. */
export function errorHandler(error: unknown, req: Request, res: Response, _next: NextFunction): void {
  sendError(res, error, req.body);
}

/** No route matched: a 404 Error body, never an HTML page. */
export function notFound(req: Request, res: Response): void {
  sendError(res, new AppError('NotFoundError', `Route not found: ${req.method} ${req.path}`));
}
