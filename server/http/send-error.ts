import type { NextFunction, Request, Response } from 'express';
import { AppError } from '../../shared/errors.ts';
import { toAppError } from '../errors.ts';
import { requestError } from './body.ts';

/** Sends any error as the spec's Error body. */
export function sendError(res: Response, error: unknown, input?: unknown): void {
  const app = requestError(error) ?? toAppError(error, input, res.req.log);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.status(app.status).json(app.toBody());
}

/** The last middleware: whatever reached Express's error path leaves as an Error body. */
export function errorHandler(error: unknown, req: Request, res: Response, _next: NextFunction): void {
  sendError(res, error, req.body);
}

/** No route matched: a 404 Error body, never an HTML page. */
export function notFound(req: Request, res: Response): void {
  sendError(res, new AppError('NotFoundError', `Route not found: ${req.method} ${req.path}`));
}
