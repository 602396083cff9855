/**
 * `npm run admin -- <command>`: operator commands. They use the same data layer as the
 * server, on the same database, so they work while the server runs.
 *
 *   user add --email E --password P --fullname "F L" [--role superuser|moderator]
 *   user list
 *   settings set moderation on|off
 *   settings get moderation
 *   institution add --domain D --name N [--country C]
 *   institution list
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
  settings set moderation on|off
      With moderation on, a new profile without an institutional email waits for a moderator.
  settings get moderation
  institution add --domain D --name N [--country C]
      Adds an institution: a confirmed email at D (or a subdomain) activates as Active Institutional.
  institution list
`;

const InstitutionArgs = z.strictObject({
  domain: z.string().regex(/^[a-z0-9-]+(\.[a-z0-9-]+)+$/i, { message: 'must be a domain such as example.edu' }),
  name: NonEmptyString,
  country: NonEmptyString.optional(),
});

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

  async 'settings set'(services, args) {
    const [key, value, ...rest] = args;
    if (key !== 'moderation' || (value !== 'on' && value !== 'off') || rest.length > 0) {
      throw new AppError('ValidationError', 'Usage: settings set moderation on|off');
    }
    await services.activation.setModeration(value === 'on');
    console.log(`moderation ${value}`);
  },

  async 'settings get'(services, args) {
    if (args.join(' ') !== 'moderation') throw new AppError('ValidationError', 'Usage: settings get moderation');
    console.log(`moderation ${(await services.activation.moderation()) ? 'on' : 'off'}`);
  },

  async 'institution add'(services, args) {
    const { values } = parseArgs({
      args,
      options: { domain: { type: 'string' }, name: { type: 'string' }, country: { type: 'string' } },
      strict: true,
    });
    const input = parseOrThrow(InstitutionArgs, values);
    await services.activation.addInstitution(input.domain, input.name, input.country ?? null);
    console.log(input.domain.toLowerCase());
  },

  async 'institution list'(services) {
    for (const domain of await services.activation.institutionDomains()) console.log(domain);
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
  let services: Services | undefined;
  try {
    await migrateToLatest(db);
    services = await createServices(config, db, logger);
    await command(services, argv.slice(2));
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
    await services?.close();
    await db.destroy();
  }
}

process.exitCode = await main(process.argv.slice(2));
