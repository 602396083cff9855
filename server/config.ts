import { isIP } from 'node:net';
import path from 'node:path';
import { z } from 'zod';

/** Where the service serves its own pages (`server/web/`): `WEB_URL` defaults to `${BASE_URL}/account`. */
export const PAGES_PREFIX = '/account';

/** A megabyte, as forms' `maxSize` and the upload settings count it: 2^20 bytes. */
export const MB = 1024 * 1024;

/**
 * A whole number in decimal digits. `z.coerce.number()` read an empty value (a blank line in an
 * environment file) as 0, and `0x50` or ` 80 ` as 80: `PORT=` listened on a random port and
 * `UPLOAD_HUMAN_VERIFICATION_AFTER=` turned the check off. Such a value is refused at start.
 */
const WholeNumber = z.string().regex(/^\d{1,15}$/, 'must be a whole number in decimal digits').transform(Number);
/** A number of megabytes, decimals allowed (`0.5`), in decimal digits. */
const Megabytes = z.string().regex(/^\d{1,9}(\.\d{1,6})?$/, 'must be a number of megabytes in decimal digits').transform(Number).pipe(z.number().positive());
const Port = WholeNumber.pipe(z.int().min(0).max(65535));
const Seconds = WholeNumber.pipe(z.int().min(1));
const Url = z.url({ protocol: /^https?$/ }).transform((url) => url.replace(/\/+$/, ''));

/**
 * Where uploaded files are stored: `STORAGE_URL`. Unset: the local disk under `DATA_DIR`, as
 * always. `s3://<bucket>[/<prefix>]?endpoint=<http(s) URL>&region=<region>&forcePathStyle=true`:
 * an S3-compatible bucket that every server process shares (`endpoint` for a store other than
 * AWS, `region` defaults to us-east-1, `forcePathStyle` for stores without per-bucket host names,
 * such as MinIO). Credentials are never part of the URL (it ends up in process listings, shell
 * histories and logs): the AWS SDK's own chain gives them (`AWS_ACCESS_KEY_ID` and
 * `AWS_SECRET_ACCESS_KEY`, `AWS_PROFILE`, or the machine's role), and a URL carrying them is refused.
 */
export type StorageTarget =
  | { kind: 'local' }
  | { kind: 's3'; bucket: string; prefix: string; endpoint: string | undefined; region: string; forcePathStyle: boolean };
const StorageUrl = z.string().transform((text, ctx): StorageTarget => {
  const refuse = (message: string) => {
    ctx.addIssue({ code: 'custom', message });
    return z.NEVER;
  };
  const url = URL.parse(text);
  if (!url || url.protocol !== 's3:') return refuse('STORAGE_URL must be s3://<bucket>[/<prefix>]?endpoint=…&region=…&forcePathStyle=true');
  if (url.username || url.password || url.searchParams.has('accessKeyId') || url.searchParams.has('secretAccessKey')) {
    return refuse('STORAGE_URL must not hold credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY');
  }
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(url.hostname)) return refuse(`STORAGE_URL: ${url.hostname} is not a bucket name`);
  const prefix = url.pathname.replace(/^\/+|\/+$/g, '');
  // The URL parser has already resolved any `.` and `..` in the path.
  if (!/^[A-Za-z0-9._/-]*$/.test(prefix)) return refuse('STORAGE_URL: the key prefix may hold letters, digits, ".", "_", "-" and "/"');
  const unknown = [...url.searchParams.keys()].filter((key) => !['endpoint', 'region', 'forcePathStyle'].includes(key));
  if (unknown.length > 0) return refuse(`STORAGE_URL: unknown parameter ${unknown.join(', ')} (endpoint, region and forcePathStyle are known)`);
  const endpoint = url.searchParams.get('endpoint') ?? undefined;
  if (endpoint !== undefined && !/^https?:$/.test(URL.parse(endpoint)?.protocol ?? '')) return refuse('STORAGE_URL: endpoint must be an http or https URL');
  const region = url.searchParams.get('region') ?? 'us-east-1';
  if (!/^[a-z0-9-]{1,40}$/.test(region)) return refuse('STORAGE_URL: region must be a region name such as us-east-1');
  const forcePathStyle = url.searchParams.get('forcePathStyle') ?? 'false';
  if (forcePathStyle !== 'true' && forcePathStyle !== 'false') return refuse('STORAGE_URL: forcePathStyle must be true or false');
  return { kind: 's3', bucket: url.hostname, prefix: prefix && `${prefix}/`, endpoint, region, forcePathStyle: forcePathStyle === 'true' };
});

/** A domain name in lower case, such as `example.org`. */
const DOMAIN_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

/** The environment variables the service reads, validated once at start-up. */
const Env = z.object({
  PORT: Port.default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATA_DIR: z.string().min(1).default('./data'),
  DATABASE_URL: z
    .url({ protocol: /^postgres(ql)?$/, error: 'DATABASE_URL must be a postgres:// (or postgresql://) address' })
    .optional(),
  BASE_URL: Url.optional(),
  DEV_BASE_URL: Url.optional(),
  WEB_URL: Url.optional(),
  COOKIE_DOMAIN: z.string().regex(DOMAIN_NAME, 'COOKIE_DOMAIN is a domain name such as example.org').optional(),
  SESSION_SECRET: z.string().min(32, 'SESSION_SECRET must be at least 32 characters').optional(),
  MFA_ENCRYPTION_KEY: z.string().min(32, 'MFA_ENCRYPTION_KEY must be at least 32 characters').optional(),
  // Checked at start: a typo would otherwise show only as mail that never leaves.
  SMTP_URL: z
    .url({ protocol: /^smtps?$/, hostname: /./, error: 'SMTP_URL must be an smtp:// or smtps:// address with a host, such as smtps://user:pass@mail.example.org' })
    .optional(),
  MAIL_OUTBOX: z.literal('on', { error: 'MAIL_OUTBOX may only be set to on' }).optional(),
  MAIL_FROM: z.string().min(3).default('Peer Review <noreply@localhost>'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  REFRESH_TOKEN_SECONDS: Seconds.default(30 * 24 * 60 * 60),
  ACTIVATION_TOKEN_SECONDS: Seconds.default(7 * 24 * 60 * 60),
  EMAIL_TOKEN_SECONDS: Seconds.default(2 * 24 * 60 * 60),
  RESET_TOKEN_SECONDS: Seconds.default(60 * 60),
  OIDC_KEY_ACTIVATION_SECONDS: WholeNumber.pipe(z.int().min(0)).default(300),
  OIDC_REFRESH_ABSOLUTE_SECONDS: Seconds.default(30 * 24 * 60 * 60),
  OIDC_REFRESH_IDLE_SECONDS: Seconds.default(14 * 24 * 60 * 60),
  MAX_UPLOAD_MB: Megabytes.default(100),
  CHUNK_MAX_MB: Megabytes.default(10),
  UPLOAD_ABANDON_SECONDS: Seconds.default(24 * 60 * 60),
  UPLOAD_HUMAN_VERIFICATION_AFTER: WholeNumber.pipe(z.int().min(0)).default(10),
  HUMAN_VERIFICATION_URL: z.url({ protocol: /^https?$/ }).optional(),
  HUMAN_VERIFICATION_SECRET: z.string().min(1).optional(),
  HUMAN_VERIFICATION_SITE_KEY: z.string().regex(/^[\w-]{1,200}$/, 'HUMAN_VERIFICATION_SITE_KEY is a Turnstile site key (letters, digits, _ and -)').optional(),
  SIGNUP_WITHOUT_HUMAN_VERIFICATION: z.enum(['on', 'off']).optional(),
  STORAGE_URL: StorageUrl.optional(),
  TRUST_PROXY: z
    .string()
    .regex(/^(\d{1,2}|[\w.:/]+(\s*,\s*[\w.:/]+)*)$/, 'TRUST_PROXY is a number of proxies, or a comma-separated list of addresses, subnets, loopback, linklocal or uniquelocal')
    .optional(),
  KEEP_ALIVE_SECONDS: Seconds.default(75),
  /** The metrics listener (`server/metrics/`): off when unset. */
  METRICS_PORT: Port.optional(),
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /**
   * `test` hashes new passwords at a tiny scrypt cost (`accounts/passwords.ts`), for the test
   * suite only: refused unless `NODE_ENV=test`, so no install can weaken its hashes by mistake.
   */
  PASSWORD_HASH_COST: z.enum(['owasp', 'test']).default('owasp'),
  NODE_ENV: z.string().optional(),
  WEBAUTHN_RP_ID: z.string().regex(DOMAIN_NAME, 'WEBAUTHN_RP_ID is a domain name such as example.org').optional(),
})
  // The outbox is a folder of one machine: with several processes (PostgreSQL), mail written by
  // one is not seen on another machine. Not refused outright: one machine with a few processes on
  // one DATA_DIR (and the tests) read it fine, so the operator says so (see `outboxOnly`).
  .refine((env) => !env.DATABASE_URL || env.SMTP_URL !== undefined || env.MAIL_OUTBOX === 'on', {
    message:
      'SMTP_URL is required with DATABASE_URL: the processes sharing the database may run on several machines, and mail written to one machine\'s outbox ($DATA_DIR/outbox) reaches nobody. Set MAIL_OUTBOX=on to keep writing mail to the outbox of each machine anyway',
    path: ['SMTP_URL'],
  })
  .refine((env) => env.PASSWORD_HASH_COST !== 'test' || env.NODE_ENV === 'test', {
    message: 'PASSWORD_HASH_COST=test is for the test suite only (it needs NODE_ENV=test): unset it to hash passwords at OWASP\'s cost',
    path: ['PASSWORD_HASH_COST'],
  })
  .refine((env) => env.METRICS_PORT === undefined || env.METRICS_PORT === 0 || env.METRICS_PORT !== env.PORT, {
    message: 'METRICS_PORT must differ from PORT: the metrics have a listener of their own, never the public one',
    path: ['METRICS_PORT'],
  })
  .refine((env) => (env.HUMAN_VERIFICATION_URL === undefined) === (env.HUMAN_VERIFICATION_SECRET === undefined), {
    message: 'Set both HUMAN_VERIFICATION_URL and HUMAN_VERIFICATION_SECRET, or neither',
    path: ['HUMAN_VERIFICATION_URL'],
  });

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /**
   * A PostgreSQL database shared by every process of the install; unset, the SQLite file in
   * `dataDir` (one machine).
   */
  databaseUrl: string | undefined;
  /** The service's public address; the OIDC `issuer`. */
  baseUrl: string;
  devBaseUrl: string;
  /**
   * The web application's address, used in links sent by mail: `WEB_URL`, or this service's
   * own pages (`${BASE_URL}/account`, `server/web/`) when it is unset.
   */
  webUrl: string;
  /**
   * This service's own pages (`${BASE_URL}/account`, `server/web/`), whatever `WEB_URL` says: the
   * mailed links to pages the platform's web client does not have (an added address's
   * confirmation, the undo of an email change) lead here.
   */
  pagesUrl: string;
  /**
   * Where the sign-in provider sends a browser to sign in and consent: a frontend set as
   * `WEB_URL` serves one page for both (`/oidc/authorize?interaction=`, as the real platform's
   * web client does: `oidc/flow.ts` `loginPageUrl`); otherwise this service's own provider pages
   * under `BASE_URL` (`/oidc/login`, `/oidc/consent`).
   */
  signInPagesUrl: string;
  /**
   * The origin of a web application on another origin than this service (`WEB_URL`'s, when it
   * differs from `BASE_URL`'s): its pages call the API from the browser with the person's
   * cookies, so its requests (and only its) are answered with credentialed CORS (`http/cors.ts`).
   * Undefined when `WEB_URL` is unset or on this service's origin.
   */
  frontendOrigin: string | undefined;
  /**
   * The `Domain` of the session cookies (`COOKIE_DOMAIN`): unset, they are this host's alone. Set
   * to a domain that both `BASE_URL` and `WEB_URL` are under, so that a web application's own
   * server reads the session it renders pages for, as the platform's web client does.
   */
  cookieDomain: string | undefined;
  sessionSecret: string | undefined;
  /**
   * The key (32+ characters, hashed to 256 bits) that encrypts TOTP secrets at rest; unset, one
   * derived from the session secret. Changing it makes every stored TOTP secret unreadable.
   */
  mfaEncryptionKey: string | undefined;
  smtpUrl: string | undefined;
  /**
   * Mail goes to `$DATA_DIR/outbox` although the database is shared (PostgreSQL, no `SMTP_URL`,
   * `MAIL_OUTBOX=on`): each process writes to its own machine's folder. Logged as a warning.
   */
  outboxOnly: boolean;
  mailFrom: string;
  logLevel: z.infer<typeof Env>['LOG_LEVEL'];
  /** Lifetimes, in seconds. */
  refreshTokenSeconds: number;
  activationTokenSeconds: number;
  emailTokenSeconds: number;
  resetTokenSeconds: number;
  /** How long a rotated-in signing key is published before it signs (the JWKS cache lifetime). */
  oidcKeyActivationSeconds: number;
  /** A provider refresh-token family's lifetimes where its client sets none: at most, and unused. */
  oidcRefreshAbsoluteSeconds: number;
  oidcRefreshIdleSeconds: number;
  /** Largest file accepted where a form sets no `maxSize`, in bytes. */
  maxUploadBytes: number;
  /** Largest chunk of a chunked upload, in bytes. */
  maxChunkBytes: number;
  /** Unfinished chunked uploads older than this are deleted. */
  uploadAbandonSeconds: number;
  /** Uploads per user per hour before a human-verification token is needed; 0: never. */
  uploadHumanVerificationAfter: number;
  /** A Turnstile-style `siteverify` endpoint and its secret; unset, development mode. */
  humanVerification: { url: string; secret: string } | undefined;
  /**
   * The public site key of the Cloudflare Turnstile widget the account pages show where human
   * verification is asked (sign-up, reset): unset, the pages ask for the answer in a text field.
   */
  humanVerificationSiteKey: string | undefined;
  /**
   * Whether `POST /register` without a human-verification token is accepted (a token that is
   * sent is still checked): on in development mode, off when human verification is configured,
   * unless `SIGNUP_WITHOUT_HUMAN_VERIFICATION` says otherwise. Scripts such as the real
   * platform's Python client register without one.
   */
  signupWithoutHumanVerification: boolean;
  /** Where uploaded files are stored (`STORAGE_URL`). */
  storage: StorageTarget;
  /**
   * Which proxies in front of the service are believed when their `X-Forwarded-For` names the
   * client (Express's `trust proxy`: a number of hops, or the proxies' addresses); unset, none:
   * the client is the connection's address. Rate limits per address and the logs use it.
   */
  trustProxy: number | string | false;
  /** Passkeys (WebAuthn): see `webAuthnSettings`. */
  webauthn: WebAuthnSettings;
  /** How long an idle keep-alive connection is kept (`http/app.ts`, `configureTimeouts`): longer than a load balancer's. */
  keepAliveSeconds: number;
  /**
   * The metrics listener's port (`METRICS_PORT`): `GET /metrics` in Prometheus' text format, on a
   * listener of its own (`server/metrics/server.ts`); unset, no metrics are kept at all.
   */
  metricsPort: number | undefined;
  /** Its address (`METRICS_HOST`), 127.0.0.1 by default: never public unless said so. */
  metricsHost: string;
  /** The scrypt cost of new password hashes: OWASP's, or the test suite's (`PASSWORD_HASH_COST`). */
  passwordHashCost: 'owasp' | 'test';
  /**
   * Running under the test suite (`NODE_ENV=test`): development mode's token `dev-ok` is then
   * taken past an account's sign-in limit too, so the suite can walk that path; anywhere else it
   * is not (it proves nothing), and the limit stays a hard one (`accounts/sign-in.ts`).
   */
  testSuite: boolean;
}

/**
 * Where passkeys belong. `rpId` is the domain a passkey is made for: `WEBAUTHN_RP_ID`, or the
 * host of `BASE_URL`; it must be that host or a domain it is under (so `example.org` for
 * `https://api.example.org`, when the web application at `https://example.org` makes passkeys
 * too). `origins` are the pages a ceremony may run on: `BASE_URL`'s (the sign-in pages) and
 * `WEB_URL`'s when its host is under `rpId` too.
 */
export interface WebAuthnSettings {
  rpId: string;
  rpName: string;
  origins: string[];
}

/** A setting that cannot be used: its message names it and says what it must be. */
class InvalidConfiguration extends Error {}

/** The start-up error for settings that cannot be used, one line each. */
function invalidConfiguration(lines: readonly string[]): Error {
  return new InvalidConfiguration(`Invalid configuration:\n${lines.map((line) => `  ${line}`).join('\n')}`);
}

/** `loadConfig` for a command's start: a setting that cannot be used is said on stderr, without a stack, and the process exits 1. */
export function loadConfigOrExit(env: Record<string, string | undefined>): Config {
  try {
    return loadConfig(env);
  } catch (error) {
    if (!(error instanceof InvalidConfiguration)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
}

/** The start-up error for one setting that cannot be used. */
function invalidSetting(name: string, message: string): Error {
  return invalidConfiguration([`${name}: ${message}`]);
}

/** Whether `host` is `domain` or a name under it. */
const isUnder = (host: string, domain: string) => host === domain || host.endsWith(`.${domain}`);

export function webAuthnSettings(baseUrl: string, webUrl: string, rpIdSetting: string | undefined): WebAuthnSettings {
  const base = new URL(baseUrl);
  const rpId = rpIdSetting ?? base.hostname;
  if (!isUnder(base.hostname, rpId)) throw invalidSetting('WEBAUTHN_RP_ID', `${rpId} must be the host of BASE_URL (${base.hostname}) or a domain it is under`);
  const web = new URL(webUrl);
  const origins = [base.origin, ...(web.origin !== base.origin && isUnder(web.hostname, rpId) ? [web.origin] : [])];
  return { rpId, rpName: 'Peer Review', origins };
}

/**
 * `WEB_URL`'s origin when it is not the service's own (`Config.frontendOrigin`). Over plain http
 * beside an https service it is refused: its pages, which anyone on the network could change,
 * would act with the person's cookies.
 */
function frontendOrigin(baseUrl: string, webUrl: string | undefined): string | undefined {
  if (webUrl === undefined) return undefined;
  const [base, web] = [new URL(baseUrl), new URL(webUrl)];
  if (web.origin === base.origin) return undefined;
  if (base.protocol === 'https:' && web.protocol !== 'https:') throw invalidSetting('WEB_URL', `${web.origin} must be https, as BASE_URL is: its pages call the API with the person's cookies`);
  return web.origin;
}

/**
 * `COOKIE_DOMAIN`, checked: a cookie for a domain that `BASE_URL`'s host is not under would be
 * refused by every browser, and one that `WEB_URL`'s is not under would never reach the web
 * application it is set for.
 */
function cookieDomain(baseUrl: string, webUrl: string | undefined, setting: string | undefined): string | undefined {
  if (setting === undefined) return undefined;
  // A top-level domain (or `localhost`) is no cookie domain a browser accepts, nor is an address.
  if (!setting.includes('.') || isIP(setting) !== 0) throw invalidSetting('COOKIE_DOMAIN', `${setting} must be a domain name under a top-level domain, such as example.org`);
  for (const [name, url] of [['BASE_URL', baseUrl], ['WEB_URL', webUrl]] as const) {
    if (url === undefined) continue;
    const host = new URL(url).hostname;
    if (isIP(host.replace(/^\[|\]$/g, '')) !== 0) throw invalidSetting('COOKIE_DOMAIN', `${name} is an address (${host}), which no cookie domain covers`);
    if (!isUnder(host, setting)) throw invalidSetting('COOKIE_DOMAIN', `${setting} must be the host of ${name} (${host}) or a domain it is under`);
  }
  return setting;
}

/**
 * The service's address when `BASE_URL` is unset. A loopback install (the default `HOST`) is
 * `http://localhost:PORT`, not its IP: browsers refuse passkeys on an IP address, and every
 * mailed link and redirect follows this address, so a person who opened `127.0.0.1` would be
 * sent to a host where their passkey cannot work. `localhost` reaches the same socket.
 */
export function defaultBaseUrl(host: string, port: number): string {
  if (host === '127.0.0.1' || host === '::1' || host === 'localhost') return `http://localhost:${port}`;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** Reads the configuration from environment variables; throws a readable error on a bad value. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const parsed = Env.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw invalidConfiguration(lines);
  }
  const e = parsed.data;
  const baseUrl = e.BASE_URL ?? defaultBaseUrl(e.HOST, e.PORT);
  const pagesUrl = `${baseUrl}${PAGES_PREFIX}`;
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir: path.resolve(e.DATA_DIR),
    databaseUrl: e.DATABASE_URL,
    baseUrl,
    devBaseUrl: e.DEV_BASE_URL ?? baseUrl,
    webUrl: e.WEB_URL ?? pagesUrl,
    pagesUrl,
    signInPagesUrl: e.WEB_URL ?? baseUrl,
    frontendOrigin: frontendOrigin(baseUrl, e.WEB_URL),
    cookieDomain: cookieDomain(baseUrl, e.WEB_URL, e.COOKIE_DOMAIN),
    sessionSecret: e.SESSION_SECRET,
    mfaEncryptionKey: e.MFA_ENCRYPTION_KEY,
    smtpUrl: e.SMTP_URL,
    outboxOnly: e.DATABASE_URL !== undefined && e.SMTP_URL === undefined,
    mailFrom: e.MAIL_FROM,
    logLevel: e.LOG_LEVEL,
    refreshTokenSeconds: e.REFRESH_TOKEN_SECONDS,
    activationTokenSeconds: e.ACTIVATION_TOKEN_SECONDS,
    emailTokenSeconds: e.EMAIL_TOKEN_SECONDS,
    resetTokenSeconds: e.RESET_TOKEN_SECONDS,
    oidcKeyActivationSeconds: e.OIDC_KEY_ACTIVATION_SECONDS,
    oidcRefreshAbsoluteSeconds: e.OIDC_REFRESH_ABSOLUTE_SECONDS,
    oidcRefreshIdleSeconds: e.OIDC_REFRESH_IDLE_SECONDS,
    maxUploadBytes: Math.round(e.MAX_UPLOAD_MB * MB),
    maxChunkBytes: Math.round(e.CHUNK_MAX_MB * MB),
    uploadAbandonSeconds: e.UPLOAD_ABANDON_SECONDS,
    uploadHumanVerificationAfter: e.UPLOAD_HUMAN_VERIFICATION_AFTER,
    humanVerification:
      e.HUMAN_VERIFICATION_URL && e.HUMAN_VERIFICATION_SECRET
        ? { url: e.HUMAN_VERIFICATION_URL, secret: e.HUMAN_VERIFICATION_SECRET }
        : undefined,
    humanVerificationSiteKey: e.HUMAN_VERIFICATION_SITE_KEY,
    signupWithoutHumanVerification: e.SIGNUP_WITHOUT_HUMAN_VERIFICATION ? e.SIGNUP_WITHOUT_HUMAN_VERIFICATION === 'on' : e.HUMAN_VERIFICATION_URL === undefined,
    storage: e.STORAGE_URL ?? { kind: 'local' },
    trustProxy: e.TRUST_PROXY === undefined ? false : /^\d+$/.test(e.TRUST_PROXY) ? Number(e.TRUST_PROXY) : e.TRUST_PROXY,
    webauthn: webAuthnSettings(baseUrl, e.WEB_URL ?? baseUrl, e.WEBAUTHN_RP_ID),
    keepAliveSeconds: e.KEEP_ALIVE_SECONDS,
    metricsPort: e.METRICS_PORT,
    metricsHost: e.METRICS_HOST,
    passwordHashCost: e.PASSWORD_HASH_COST,
    testSuite: e.NODE_ENV === 'test',
  };
}
