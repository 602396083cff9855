/**
 * The failure: on PostgreSQL, a request that found every pooled connection busy past Knex's
 * acquire timeout (a flood), or a statement cut by `statement_timeout`, was a 500. Nothing was
 * written in either case, so it is a 503 with `Retry-After`, as a lock timeout already was.
 */
import knex from 'knex';
import { describe, expect, it } from 'vitest';
import { toAppError } from '../../server/errors.ts';

describe('database timeouts', () => {
  it.each([
    ['every connection of the pool busy', new knex.KnexTimeoutError('Knex: Timeout acquiring a connection.')],
    ['a statement past statement_timeout', Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' })],
    ['too many connections', Object.assign(new Error('sorry, too many clients already'), { code: '53300' })],
  ])('%s is a 503 saying to try again', (_what, cause) => {
    const error = toAppError(cause, undefined);
    expect([error.status, error.name, error.details]).toEqual([503, 'ServiceUnavailableError', { retryAfter: 1 }]);
  });
});
