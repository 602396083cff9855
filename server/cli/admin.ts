/**
 * `npm run admin -- <command>`: operator commands. They use the same data layer as the
 * server, on the same database, so they work while the server runs.
 *
 *   user add --email E --password P --fullname "F L" [--role superuser|moderator]
 *   user list
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { AppError, Email, NewPassword, NonEmptyString, parseOrThrow } from '../../shared/index.ts';
import { migrateToLatest, openDatabase } from '../../db/knex.ts';
import { loadConfig } from '../config.ts';
import { createLogger } from '../logger.ts';
import { createServices, type Services } from '../services.ts';

const USAGE = `Usage: npm run admin -- <command>

  user add --email E --password P --fullname "First Last" [--role superuser|moderator]
      Creates an active user and prints its tilde id.
  user list
      Lists every profile: id, state, emails.
`;

const UserAddArgs = z.strictObject({
  email: Email,
  password: NewPassword,
  fullname: NonEmptyString,
  role: z.enum(['superuser', 'moderator']).optional(),
});

type Command = (services: Services, args: string[]) => Promise<void>;

const commands: Record<string, Command> = {
  async 'user add'(services, args) {
    const { values } = parseArgs({
      args,
      options: { email: { type: 'string' }, password: { type: 'string' }, fullname: { type: 'string' }, role: { type: 'string' } },
      strict: true,
    });
    const input = parseOrThrow(UserAddArgs, values);
    const id = await services.accounts.createUser({ ...input, state: 'Active' });
    console.log(id);
  },

  async 'user list'(services) {
    for (const user of await services.accounts.listUsers()) {
      console.log(`${user.id}\t${user.state}\t${user.emails.join(',')}`);
    }
  },
};

async function main(argv: string[]): Promise<number> {
  const name = argv.slice(0, 2).join(' ');
  const command = commands[name];
  if (!command) {
    process.stderr.write(USAGE);
    return argv.length === 0 || argv[0] === 'help' ? 0 : 2;
  }
  const config = loadConfig(process.env);
  const logger = createLogger('warn', process.stderr);
  const db = openDatabase(config.dataDir);
  try {
    await migrateToLatest(db);
    await command(await createServices(config, db, logger), argv.slice(2));
    return 0;
  } catch (error) {
    if (error instanceof AppError) {
      const reasons = error.errors ?? [error.toBody()];
      for (const reason of reasons) process.stderr.write(`error: ${reason.message}\n`);
      return 1;
    }
    if (error instanceof TypeError && (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`error: ${error.message}\n\n${USAGE}`);
      return 2;
    }
    throw error;
  } finally {
    await db.destroy();
  }
}

process.exitCode = await main(process.argv.slice(2));
