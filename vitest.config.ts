import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Every HTTP answer a test receives is checked against the API document.
    setupFiles: ['test/setup/validate-responses.ts'],
    // A run on PostgreSQL drops the databases its tests left behind.
    globalSetup: ['test/setup/drop-test-databases.ts'],
    // Each test file starts its own server on its own SQLite file: files run in parallel,
    // bounded to the two cores of the machines this runs on.
    pool: 'forks',
    maxWorkers: 2,
    // scrypt at OWASP strength takes about a third of a second per hash.
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
