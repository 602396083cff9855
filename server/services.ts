import type { Logger } from 'pino';
import type { Db } from '../db/knex.ts';
import { PasswordHasher } from './accounts/passwords.ts';
import { AccountsRepository } from './accounts/repository.ts';
import { AccountsService } from './accounts/service.ts';
import { loadSessionSecret, SessionTokens } from './accounts/session-tokens.ts';
import type { Config } from './config.ts';
import { createMailer, type Mailer } from './mail.ts';

/** Everything the procedures call, built once per process from the configuration. */
export interface Services {
  db: Db;
  mailer: Mailer;
  accounts: AccountsService;
}

/** The composition root: the only place services are wired to their dependencies. */
export async function createServices(config: Config, db: Db, logger: Logger): Promise<Services> {
  const secret = await loadSessionSecret(config.sessionSecret, config.dataDir);
  const mailer = createMailer({ smtpUrl: config.smtpUrl, from: config.mailFrom, dataDir: config.dataDir, logger });
  const accounts = new AccountsService({
    repo: new AccountsRepository(db),
    hasher: new PasswordHasher(),
    tokens: new SessionTokens(secret, config.baseUrl),
    mailer,
    config,
    codeKey: `${secret}:codes`,
    logger,
  });
  return { db, mailer, accounts };
}
