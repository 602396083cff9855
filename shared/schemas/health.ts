import { z } from 'zod';

/** `GET /health/live`: the process answers (an orchestrator's liveness probe). */
export const LivenessResult = z.strictObject({ status: z.literal('ok') });
export type LivenessResult = z.infer<typeof LivenessResult>;

/**
 * `GET /health/ready` (an orchestrator's readiness probe): every migration has run, the database
 * takes a write, and the file store is reachable. Otherwise a 503 `ServiceUnavailableError` whose
 * `details` give each check's state (`ReadinessDetails`).
 */
export const ReadinessResult = z.strictObject({ status: z.literal('ok'), migrations: z.literal('ok'), database: z.literal('ok'), files: z.literal('ok') });
export type ReadinessResult = z.infer<typeof ReadinessResult>;

/** The `details` of a refused readiness check: `pending`, migrations not run yet; `unavailable`, the check failed or took too long. */
export const ReadinessDetails = z.strictObject({
  migrations: z.enum(['ok', 'pending', 'unavailable']),
  database: z.enum(['ok', 'unavailable']),
  files: z.enum(['ok', 'unavailable']),
});
export type ReadinessDetails = z.infer<typeof ReadinessDetails>;
