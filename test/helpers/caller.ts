/**
 * The services on a real database (as `startServer`'s), without HTTP: procedures are called through
 * `createCaller(createContextInner(...))`, as tRPC's own tests do. For rules that need no
 * transport (a schema's refusal, a transition table, who may call what).
 */
import { rm } from 'node:fs/promises';
import { migrateToLatest, openDatabase } from '../../db/knex.ts';
import { loadConfig } from '../../server/config.ts';
import { createContextInner, type Credentials, type SessionCookies } from '../../server/context.ts';
import { createLogger } from '../../server/logger.ts';
import { createCaller } from '../../server/router.ts';
import { createServices, type Services } from '../../server/services.ts';
import { dropTestDatabase, testDatabaseEnv } from './database.ts';
import { OUTBOX_ON_ONE_MACHINE, TEST_HASH_COST, tempDir } from './server.ts';

export interface TestServices {
  services: Services;
  /**
   * A caller of every procedure, as the request carrying `credentials` would call it; the
   * cookies its procedures set go to `cookies` (by default nowhere).
   */
  caller(credentials?: Credentials, cookies?: SessionCookies): ReturnType<typeof createCaller>;
  close(): Promise<void>;
}

export async function startServices(env: Record<string, string> = {}, options: { now?: () => number } = {}): Promise<TestServices> {
  const dir = await tempDir();
  const config = loadConfig({ DATA_DIR: dir, BASE_URL: 'http://127.0.0.1:9', LOG_LEVEL: 'silent', ...TEST_HASH_COST, ...OUTBOX_ON_ONE_MACHINE, ...(await testDatabaseEnv(dir)), ...env });
  const db = openDatabase(config);
  await migrateToLatest(db);
  const log = createLogger('silent');
  const services = await createServices(config, db, log, options.now);
  return {
    services,
    caller: (credentials = {}, cookies) => createCaller(createContextInner({ services, log: () => log, credentials, cookies })),
    async close() {
      await services.close();
      await db.destroy();
      await rm(dir, { recursive: true, force: true });
      await dropTestDatabase(dir);
    },
  };
}
