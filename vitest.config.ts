import path from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Every HTTP answer a test receives is checked against the API document; the temporary
    // folders a test file made are removed after it.
    setupFiles: ['test/setup/validate-responses.ts', 'test/setup/temp-dirs.ts'],
    // Makes the run's migrated database that test servers copy; a run on PostgreSQL drops the
    // databases its tests left behind.
    globalSetup: ['test/setup/test-databases.ts'],
    // Each test file starts its own server on its own SQLite file: files run in parallel,
    // bounded to the two cores of the machines this runs on. A worker runs file after file
    // without reloading the modules (`isolate: false`): loading the server anew for each of
    // 140 files was a fifth of the run. Nothing a test file keeps is module state that another
    // could see: each starts its own server, database and clock.
    pool: 'forks',
    isolate: false,
    maxWorkers: 2,
    // New passwords are hashed at a test cost (server/accounts/passwords.ts, TEST_SCRYPT): OWASP's
    // takes a third of a second per hash, minutes over the suite. Child processes inherit it;
    // test/accounts/production-hash-cost.test.ts checks that `npm start` hashes at OWASP's cost.
    // Child processes (servers, the admin command, the command-line client; hundreds a run) and
    // the workers start from Node's compile cache of the sources they load, kept between runs
    // (each entry checked against its source, written whole or not at all): a server process
    // listens after 0.86 s instead of 1.14 s.
    env: { NODE_ENV: 'test', PASSWORD_HASH_COST: 'test', NODE_COMPILE_CACHE: path.resolve(import.meta.dirname, 'node_modules/.cache/node-compile-cache') },
    // A hang shows within 30 s. Tests that take long in normal work on a loaded 2-core machine
    // (browser walks, command-line processes, several servers) say so themselves, each with a
    // generous `timeout` and the reason beside it (`const LONG` in their files).
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // `expect.poll` waits for what a page or a process does next (a status shown after a passkey
    // ceremony and a post): Vitest's 1 s default was reached on a loaded machine (the end-to-end
    // walk failed once so); a wait that never succeeds still fails, after 15 s.
    expect: { poll: { timeout: 15_000 } },
  },
});
