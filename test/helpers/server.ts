import { rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { loadConfig, type Config } from '../../server/config.ts';
import { answerClientErrors, configureTimeouts, createApp, expressMessages, type App } from '../../server/http/app.ts';
import { createLogger } from '../../server/logger.ts';
import { dropTestDatabase, migratedTestDatabaseEnv, testDatabaseEnv } from './database.ts';
import { serviceOrigins } from './service-origins.ts';
import { tempDir } from './temp-dirs.ts';

/**
 * Tests read mail from the outbox, also on PostgreSQL, where the service asks for `SMTP_URL`
 * unless told the outbox is meant (`config.ts`): a test's processes all run on this machine.
 */
export const OUTBOX_ON_ONE_MACHINE = { MAIL_OUTBOX: 'on' } as const;

/**
 * The test suite's password-hash cost (`vitest.config.ts` sets it for the run, so child
 * processes inherit it too): test servers get it from there, as `npm start` gets its own
 * environment. `test/accounts/production-hash-cost.test.ts` checks `npm start` without it.
 */
export const TEST_HASH_COST = { NODE_ENV: process.env.NODE_ENV, PASSWORD_HASH_COST: process.env.PASSWORD_HASH_COST };

export interface TestServer {
  url: string;
  dataDir: string;
  config: Config;
  service: App;
  /** Every log line the server wrote, as text. */
  logs: string[];
  close(): Promise<void>;
}

export { tempDir };

/**
 * The real service on a real database (the folder's SQLite file, or its own PostgreSQL database
 * in a run on PostgreSQL: `database.ts`) in a temporary folder, listening on 127.0.0.1 at a
 * port the system picks. Its `BASE_URL` is the address it got. Given a `now` (a `TestClock`'s),
 * every service reads that clock, so a test moves time forward instead of sleeping. Given
 * `hostName` (`localhost`, or a name a browser maps to 127.0.0.1), its address is `http://hostName:port`
 * (still listening on 127.0.0.1).
 * Without a `dataDir` its new folder's database is a copy of the run's migrated one
 * (`migratedTestDatabaseEnv`); the server's start then finds no migration left to run.
 */
export async function startServer(env: Record<string, string> = {}, dataDir?: string, options: { now?: () => number; hostName?: string } = {}): Promise<TestServer> {
  const dir = dataDir ?? (await tempDir());
  // As `npm start` makes it (`server/main.ts`): its requests inherit from the app's once it exists.
  const messages = expressMessages();
  const server: Server = createServer(messages.options);
  answerClientErrors(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  // `localhost` for passkeys: browsers refuse WebAuthn on an IP address (its RP ID must be a domain).
  const url = `http://${options.hostName ?? '127.0.0.1'}:${port}`;
  // A folder made here starts from a copy of the run's migrated database; a test's own folder
  // (a first start, a restart on the same data) from what it holds, as `npm start` would.
  const database = env.DATABASE_URL ? {} : dataDir ? await testDatabaseEnv(dir) : await migratedTestDatabaseEnv(dir);
  const config = loadConfig({ DATA_DIR: dir, BASE_URL: url, LOG_LEVEL: 'info', ...TEST_HASH_COST, ...OUTBOX_ON_ONE_MACHINE, ...database, ...env });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(chunk.toString('utf8'));
      if (process.env.TEST_PRINT_ERRORS && /"level":(50|60)/.test(chunk.toString('utf8'))) process.stderr.write(chunk);
      done();
    },
  });
  configureTimeouts(server, config);
  const service = await createApp(config, { logger: createLogger('info', sink), now: options.now });
  messages.answeredBy(service.app);
  server.on('request', service.app);
  serviceOrigins.add(url);
  return {
    url,
    dataDir: dir,
    config,
    service,
    logs,
    async close() {
      serviceOrigins.delete(url);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await service.close();
      if (!dataDir) {
        await rm(dir, { recursive: true, force: true });
        if (!env.DATABASE_URL) await dropTestDatabase(dir);
      }
    },
  };
}

/**
 * The environment for a child process of the service. Vitest puts Vite's own `BASE_URL`
 * (`/`) into `process.env`; it is not ours, so it is left out. The run's `DATABASE_URL` names
 * the server test databases are made on, not one to use: a child given a `DATA_DIR` gets that
 * folder's database, as a test server on it would; and mail goes to the outbox, as there.
 */
export async function childEnv(extra: Record<string, string>): Promise<NodeJS.ProcessEnv> {
  const { BASE_URL: _vite, DATABASE_URL: _server, ...rest } = process.env;
  const database = extra.DATA_DIR && !extra.DATABASE_URL ? await testDatabaseEnv(extra.DATA_DIR) : {};
  return { ...rest, ...OUTBOX_ON_ONE_MACHINE, ...database, ...extra };
}

/** The secret the server signs session tokens with (generated and kept in its database), to forge one. */
export async function sessionSecret(server: TestServer): Promise<string> {
  const row = (await server.service.db('install_secrets').where({ name: 'session' }).first('value')) as { value: string } | undefined;
  if (!row) throw new Error('the server has no session secret in its database');
  return row.value;
}
