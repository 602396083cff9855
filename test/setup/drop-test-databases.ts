/**
 * Vitest's global set-up for a run on PostgreSQL: when the run ends, drops the databases that
 * tests made (`test/helpers/database.ts`) and left behind, a failed test's among them.
 */
import { randomBytes } from 'node:crypto';
import { onTestServer, runPrefix, TEST_POSTGRES_URL } from '../helpers/database.ts';

export default function setup(): () => Promise<void> {
  // Inherited by the test workers, which name their databases after it.
  process.env.TEST_DATABASE_RUN = randomBytes(4).toString('hex');
  return async () => {
    if (!TEST_POSTGRES_URL) return;
    const left = await onTestServer('select datname from pg_database where starts_with(datname, $1)', [runPrefix()]);
    for (const { datname } of left.rows as Array<{ datname: string }>) await onTestServer(`drop database if exists "${datname}" with (force)`);
  };
}
