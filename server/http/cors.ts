/**
 * The route table's `cors` middleware. `protocol`: public clients call the sign-in provider's
 * endpoints from any origin; none of them reads cookies. `read-only`: any origin may read the
 * answer (the API document).
 */
import type { NextFunction, Request, Response } from 'express';

export function protocolCors(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Access-Control-Allow-Origin', '*');
  res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type');
  res.setHeader('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
  next();
}

export function readOnlyCors(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Access-Control-Allow-Origin', '*');
  next();
}

/** A `preflight` route's answer: its CORS headers are set, and there is no body. */
export function answerPreflight(_req: Request, res: Response): void {
  res.status(204).end();
}
