/**
 * `npm run admin -- <command>`: operator commands. They use the same data layer as the
 * server, on the same database, so they work while the server runs.
 *
 *   user add --email E --password-stdin|--password P --fullname "F L" [--role superuser|moderator]
 *   user list
 *   settings set moderation on|off
 *   settings get moderation
 *   institution add --domain D --name N [--country C]
 *   institution list
 *   oidc-client add --id ID --name "App" --redirect-uri URI [--redirect-uri URI2] --scopes "openid profile email"
 *   oidc-client device --id ID --name "Tool" --scopes "openid profile" [--offline]
 *   oidc-client approve|reject|remove ID
 *   oidc-client list
 *   oidc-client registration-token [--approved] [--expires-in SECONDS]
 *   oidc-client resource-server --id ID --name "API name" --for CLIENT_ID [--for CLIENT_ID2 …]
 *   oidc-client rotate-secret ID [--overlap SECONDS]
 *   oidc-keys rotate
 *   mfa off --user ID_OR_EMAIL --reason "how the person was identified"
 *   impersonators set --user ID_OR_EMAIL [--by ID …]
 *   mail list|retry|purge (`mail.ts`)
 *   backup --to DIR
 *   restore --from DIR
 *
 * `backup` and `restore` (`../operations/`) work on the data folder itself and run before the
 * database is opened: a restore must find DATA_DIR as it was (opening would create and migrate a
 * database there), and a backup needs no services.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { AppError, DeviceClientInput, Email, NewPassword, NonEmptyString, OidcClientIdInput, OidcClientInput, parseOrThrow, queryInt, ResourceServerInput, SetImpersonatorsInput } from '../../shared/index.ts';
import { migrateToLatest, openDatabase } from '../../db/knex.ts';
import { loadConfigOrExit, type Config } from '../config.ts';
import { MAIL_USAGE, mailCommands } from './mail.ts';
import { createLogger } from '../logger.ts';
import type { Services } from '../services.ts';
import { backup, describeBackup } from '../operations/backup.ts';
import { describeRestore, restore } from '../operations/restore.ts';

const USAGE = `Usage: npm run admin -- <command>

  user add --email E --password-stdin --fullname "First Last" [--role superuser|moderator]
      The password is the first line of standard input (--password P also works, but is
      seen in ps and kept in shell history).
      Creates an active user and prints its tilde id.
  user list
      Lists every profile: id, state, emails.
  settings set moderation on|off
      With moderation on, a new profile without an institutional email waits for a moderator.
  settings get moderation
  institution add --domain D --name N [--country C]
      Adds an institution: a confirmed email at D (or a subdomain) activates as Active Institutional.
  institution list
  oidc-client add --id ID --name "App name" --redirect-uri URI [--redirect-uri URI2] --scopes "openid profile email"
      Registers a sign-in client (status pending).
  oidc-client device --id ID --name "Tool name" --scopes "openid profile email" [--offline]
      Registers a command line or a device without a browser (status pending): it signs people in
      with the device grant (RFC 8628), a code they type on the device page; no redirect URI, no
      secret. With --offline it may ask for refresh tokens.
  oidc-client approve ID | oidc-client reject ID | oidc-client remove ID
      approve prints what it approved, as list shows it.
  oidc-client list
  oidc-client registration-token [--approved] [--expires-in SECONDS]
      Prints a one-use initial access token for the registration endpoint (RFC 7591), good for a
      day by default. With --approved, the client it registers is approved at once; without, it
      waits for approval like any other.
  oidc-client resource-server --id ID --name "API name" --for CLIENT_ID [--for CLIENT_ID2 …]
      Registers a resource server: an API that checks the access tokens of the named clients at
      the introspection endpoint (RFC 7662) with the secret printed on the last line (shown once).
      It signs nobody in; it is approved at once.
  oidc-client rotate-secret ID [--overlap SECONDS]
      Prints a new secret for a confidential client (shown once); the old one stays good for the
      overlap (a day by default; 0 ends it at once).
  oidc-keys rotate
      Adds a new ID-token signing key; the old public key stays published until its tokens expire.
  mfa off --user ID_OR_EMAIL --reason "how you made sure it is them"
      Turns multi-factor sign-in off for a person who lost every factor and every recovery code:
      removes their factors, passkeys, recovery codes and remembered browsers. Written to the
      audit log with the reason, and mailed to the person.
  impersonators set --user ID_OR_EMAIL [--by ID_OR_EMAIL_OR_GROUP …]
      Sets who may impersonate the person (the impersonators of their own ~ group); each --by
      names one, and none takes every grant back. Written to the audit log.
${MAIL_USAGE}  backup --to DIR
      Copies the database (as of one moment, while the server runs) and every file it refers to
      into DIR, a new or empty folder, with a manifest of SHA-1s. It holds password hashes and
      secrets: keep it safe. SQLite and local files only; on PostgreSQL or S3 it says what to use.
  restore --from DIR
      Checks a backup and restores it into DATA_DIR, which must be missing or empty; on any
      failure DATA_DIR stays as it was. The server migrates it when it starts.
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

/** The commands that write mail: they send it before they exit (others leave due mail to the server). */
const MAILING = new Set(['mfa off', 'mail retry']);

const commands: Record<string, Command> = {
  async 'user add'(services, args) {
    const { values } = parseArgs({
      args,
      options: { email: { type: 'string' }, password: { type: 'string' }, 'password-stdin': { type: 'boolean' }, fullname: { type: 'string' }, role: { type: 'string' } },
      strict: true,
    });
    const { 'password-stdin': fromStdin, ...rest } = values;
    if (fromStdin && rest.password !== undefined) throw new AppError('ValidationError', 'Give --password or --password-stdin, not both');
    // On the command line a password is in `ps`, the shell's history and npm's echo of the command.
    if (rest.password !== undefined) console.error('--password is seen by other users of this machine (ps) and kept in shell history: prefer --password-stdin');
    const input = parseOrThrow(UserAddArgs, fromStdin ? { ...rest, password: await firstLineOfStdin() } : rest);
    const id = await services.signUp.createUser({ ...input, state: 'Active' });
    console.log(id);
  },

  async 'user list'(services) {
    for (const user of await services.profiles.listUsers()) {
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

  async 'oidc-client add'(services, args) {
    const { values } = parseArgs({
      args,
      options: { id: { type: 'string' }, name: { type: 'string' }, 'redirect-uri': { type: 'string', multiple: true }, scopes: { type: 'string' } },
      strict: true,
    });
    const input = parseOrThrow(OidcClientInput, {
      id: values.id,
      name: values.name,
      redirectUris: values['redirect-uri'],
      scopes: values.scopes?.split(/\s+/).filter(Boolean),
    });
    const client = await services.oidc.addClient(input);
    console.log(`${client.id}\t${client.status}`);
  },

  async 'oidc-client approve'(services, args) {
    // What was approved, as `list` shows it: a change the client made since it was looked at shows here.
    const c = await services.oidc.setClientStatus(clientIdArg(args), 'approved');
    console.log(`${c.id}\t${c.status}\t${c.name}\t${c.scopes.join(' ')}\t${c.redirectUris.join(' ')}`);
  },

  async 'oidc-client reject'(services, args) {
    console.log(`${(await services.oidc.setClientStatus(clientIdArg(args), 'rejected')).id}\trejected`);
  },

  async 'oidc-client remove'(services, args) {
    await services.oidc.removeClient(clientIdArg(args));
    console.log(`${args[0]}\tremoved`);
  },

  async 'oidc-client list'(services) {
    for (const c of await services.oidc.listClients()) {
      console.log(`${c.id}\t${c.status}\t${c.name}\t${c.scopes.join(' ')}\t${c.redirectUris.join(' ')}`);
    }
  },

  async 'oidc-client registration-token'(services, args) {
    const { values } = parseArgs({ args, options: { approved: { type: 'boolean' }, 'expires-in': { type: 'string' } }, strict: true });
    const { expiresIn } = parseOrThrow(RegistrationTokenArgs, { expiresIn: values['expires-in'] });
    const { token } = await services.oidc.issueRegistrationToken({ approved: values.approved === true, expiresInSeconds: expiresIn });
    // The token alone on its line, so a script can read it: it is shown once, and stored only as a hash.
    console.log(token);
  },

  async 'oidc-client device'(services, args) {
    const { values } = parseArgs({ args, options: { id: { type: 'string' }, name: { type: 'string' }, scopes: { type: 'string' }, offline: { type: 'boolean' } }, strict: true });
    const input = parseOrThrow(DeviceClientInput, { id: values.id, name: values.name, scopes: values.scopes?.split(/\s+/).filter(Boolean), offline: values.offline === true });
    const client = await services.oidc.addDeviceClient(input);
    console.log(`${client.id}\t${client.status}`);
  },

  async 'oidc-client resource-server'(services, args) {
    const { values } = parseArgs({ args, options: { id: { type: 'string' }, name: { type: 'string' }, for: { type: 'string', multiple: true } }, strict: true });
    const { client, secret } = await services.oidc.addResourceServer(parseOrThrow(ResourceServerInput, { id: values.id, name: values.name, forClients: values.for ?? [] }));
    console.log(`${client.id}\t${client.status}`);
    // The secret alone on the last line, so a script can read it: shown once, stored only as a hash.
    console.log(secret);
  },

  async 'oidc-client rotate-secret'(services, args) {
    const { values, positionals } = parseArgs({ args, options: { overlap: { type: 'string' } }, allowPositionals: true, strict: true });
    const { overlap } = parseOrThrow(RotateSecretArgs, { overlap: values.overlap });
    console.log(await services.oidc.rotateSecret(clientIdArg(positionals), overlap));
  },

  async 'oidc-keys rotate'(services) {
    console.log(await services.oidc.keys.rotate());
  },

  async 'impersonators set'(services, args) {
    const { values } = parseArgs({ args, options: { user: { type: 'string' }, by: { type: 'string', multiple: true } }, strict: true });
    const input = parseOrThrow(SetImpersonatorsInput, { user: values.user, impersonators: values.by ?? [] });
    const result = await services.impersonation.setImpersonators(input, null);
    console.log(`${result.id}\t${result.impersonators.length > 0 ? result.impersonators.join(' ') : '(nobody)'}`);
  },

  async 'mfa off'(services, args) {
    const { values } = parseArgs({ args, options: { user: { type: 'string' }, reason: { type: 'string' } }, strict: true });
    const input = parseOrThrow(MfaOffArgs, values);
    const { profileId, removed } = await services.mfa.disableForOperator(input.user, input.reason);
    console.log(`${profileId}\tmulti-factor sign-in off${removed.length > 0 ? ` (removed: ${removed.join(', ')})` : ' (none was on)'}`);
  },

  ...mailCommands,
};

const MfaOffArgs = z.strictObject({ user: NonEmptyString, reason: NonEmptyString });
/** A number of seconds in decimal digits (an empty `--overlap=` is no 0: `queryInt`). */
const Seconds = (fallback: number, max: number) => queryInt(0, max).default(fallback);
/** An initial access token lives a day unless told otherwise (at most a year). */
const RegistrationTokenArgs = z.strictObject({ expiresIn: Seconds(24 * 3600, 366 * 24 * 3600).refine((s) => s > 0, 'must be at least 1 second') });
/** The old secret stays good a day after a rotation unless told otherwise (0: at once). */
const RotateSecretArgs = z.strictObject({ overlap: Seconds(24 * 3600, 366 * 24 * 3600) });

/** The first line of standard input, without its line ending: where `--password-stdin` reads the password. */
async function firstLineOfStdin(): Promise<string> {
  let text = '';
  for await (const chunk of process.stdin) {
    text += String(chunk);
    if (text.includes('\n')) break;
  }
  return text.split(/\r?\n/, 1)[0] ?? '';
}

function clientIdArg(args: string[]): string {
  if (args.length !== 1 || !args[0]) throw new AppError('ValidationError', 'Give exactly one client id');
  return parseOrThrow(OidcClientIdInput, { id: args[0] }).id;
}

type Operation = (config: Config, args: string[]) => Promise<void>;

/** Commands on the data folder itself, run before the database is opened (see the header). */
const operations: Record<string, Operation> = {
  async backup(config, args) {
    const { values } = parseArgs({ args, options: { to: { type: 'string' } }, strict: true });
    if (!values.to) throw new AppError('MissingRequiredError', 'Usage: backup --to DIR');
    for (const line of describeBackup(await backup(config, values.to))) console.log(line);
  },

  async restore(config, args) {
    const { values } = parseArgs({ args, options: { from: { type: 'string' } }, strict: true });
    if (!values.from) throw new AppError('MissingRequiredError', 'Usage: restore --from DIR');
    for (const line of describeRestore(await restore(config, values.from))) console.log(line);
  },
};

/**
 * The commands that take no arguments, as their definitions say (they declare none after the
 * services): anything after them is a mistake, not ignored.
 */
const TAKES_NOTHING = new Set(Object.keys(commands).filter((name) => commands[name]!.length < 2));

async function main(argv: string[]): Promise<number> {
  const name = argv.slice(0, 2).join(' ');
  const command = commands[name];
  const operation = argv[0] !== undefined && Object.hasOwn(operations, argv[0]) ? operations[argv[0]] : undefined;
  if (!command && !operation) {
    const asked = argv.length === 0 || ['help', '--help', '-h'].includes(argv[0] ?? '');
    (asked ? process.stdout : process.stderr).write(USAGE);
    return asked ? 0 : 2;
  }
  if (TAKES_NOTHING.has(name) && argv.length > 2) {
    process.stderr.write(`error: ${name} takes no arguments (given: ${argv.slice(2).join(' ')})\n\n${USAGE}`);
    return 2;
  }
  const config = loadConfigOrExit(process.env);
  if (operation) {
    try {
      await operation(config, argv.slice(1));
      return 0;
    } catch (error) {
      return failed(error);
    }
  }
  if (!command) return 2;
  const logger = createLogger('warn', process.stderr);
  let db: ReturnType<typeof openDatabase>;
  try {
    db = openDatabase(config);
  } catch (error) {
    return failed(error);
  }
  let services: Services | undefined;
  try {
    // A database that cannot be reached or read is the operator's to fix, whatever the driver's
    // error looks like (some have no code: a connection the server closed, a pool that waited).
    await migrateToLatest(db).catch((error: unknown) => {
      throw new DatabaseUnusable(error);
    });
    // Loaded here, not above: `backup` and `restore` need none of it, and loading it is most of a second.
    const { createServices } = await import('../services.ts');
    services = await createServices(config, db, logger);
    await command(services, argv.slice(2));
    return 0;
  } catch (error) {
    return failed(error);
  } finally {
    // A mail the command began to send is waited for and recorded: a send finishing after the
    // database closed would be sent again by the next process.
    await services?.close({ sendMail: MAILING.has(name), mailWaitMs: Infinity });
    await db.destroy();
  }
}

/** The database could not be opened or migrated: its `cause`, the driver's error. */
class DatabaseUnusable extends Error {
  constructor(cause: unknown) {
    super('the database cannot be used', { cause });
  }
}

/** An error's first line, without the statement Knex puts before its driver's message (`<sql> - <message>`). */
function saidBy(error: Error): string {
  const [line = ''] = error.message.split('\n');
  return 'sql' in error ? line.slice(line.lastIndexOf(' - ') + 3) : line;
}

/**
 * The exit code of a command that failed, its reasons written out: the service's refusals, a
 * mistyped command line, and what the system or the database says (a folder that cannot be
 * made, a database that does not answer or is locked: one line with its code, never the
 * statement that ran). Anything else is a defect, and goes on up with its stack.
 */
function failed(error: unknown): number {
  if (error instanceof AppError) {
    const reasons = error.errors ?? [error.toBody()];
    for (const reason of reasons) process.stderr.write(`error: ${reason.message}\n`);
    return 1;
  }
  const code = (error as { code?: unknown } | null)?.code;
  if (error instanceof TypeError && typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`error: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  if (error instanceof DatabaseUnusable) {
    const reason = error.cause instanceof Error ? error.cause : new Error(String(error.cause));
    const reasonCode = (reason as { code?: unknown }).code;
    process.stderr.write(`error: ${error.message}: ${saidBy(reason) || reason.name}${typeof reasonCode === 'string' ? ` (${reasonCode})` : ''}\n`);
    return 1;
  }
  if (error instanceof Error && typeof code === 'string' && /^(E[A-Z_]+|SQLITE_[A-Z_]+|[0-9A-Z]{5})$/.test(code)) {
    process.stderr.write(`error: ${saidBy(error)} (${code})\n`);
    return 1;
  }
  throw error;
}

process.exitCode = await main(process.argv.slice(2));
