/**
 * Vitest's global set-up: makes the run's migrated database that test servers copy
 * (`test/helpers/database.ts`), and when the run ends removes it and, on PostgreSQL, drops the
 * databases that tests made and left behind, a failed test's among them.
 */
import { randomBytes } from 'node:crypto';
import { makeMigratedDatabase, onTestServer, runPrefix, TEST_POSTGRES_URL } from '../helpers/database.ts';

export default async function setup(): Promise<() => Promise<void>> {
  // Inherited by the test workers, which name their databases after it.
  process.env.TEST_DATABASE_RUN = randomBytes(4).toString('hex');
  const removeMigrated = await makeMigratedDatabase();
  return async () => {
    await removeMigrated();
    if (!TEST_POSTGRES_URL) return;
    const left = await onTestServer('select datname from pg_database where starts_with(datname, $1)', [runPrefix()]);
    for (const { datname } of left.rows as Array<{ datname: string }>) await onTestServer(`drop database if exists "${datname}" with (force)`);
  };
}
