/**
 * The bench's data: written straight into the data folder through the same services and
 * repositories the server uses, before the server starts, so setting up costs seconds and not
 * HTTP round trips. Filler profiles are bulk-inserted with Knex, in one transaction.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { migrateToLatest, openDatabase } from '../../db/knex.ts';
import { AccountsRepository } from '../../server/accounts/repository.ts';
import { searchKey } from '../../server/accounts/repository/emails.ts';
import { loadConfig } from '../../server/config.ts';
import { createLogger } from '../../server/logger.ts';
import { publicClientRecord } from '../../server/oidc/clients.ts';
import { OidcRepository } from '../../server/oidc/repository.ts';
import { hashSecret, randomToken } from '../../server/secrets.ts';
import { createServices } from '../../server/services.ts';
import type { OidcScope } from '../../shared/index.ts';

export const PASSWORD = 'Bench-Password-9';
export const CLIENT_ID = 'bench-app';
/** The bench's client for refresh tokens: public, registered for the `refresh_token` grant. */
export const OFFLINE_CLIENT_ID = 'bench-offline';
export const REDIRECT_URI = 'http://127.0.0.1:9/callback';
const SCOPES: OidcScope[] = ['openid', 'profile', 'email'];

/** The name every tilde-username row asks about; it has the same three holders in every database size. */
export const TILDE_QUERY = { first: 'Ada', last: 'Lovelace' };
export const TILDE_ANSWER = '~Ada_Lovelace4';

/** How many people log in at once in row 5: one account each, so no account nears its limit. */
export const LOGIN_ACCOUNTS = 4;
/** Row 3's sessions: one per connection (32) for the warm-up, and as many for the measurement. */
export const REFRESH_SESSIONS = 64;

export interface Seeded {
  adminToken: string;
  authorToken: string;
  authorId: string;
  /** The person who signs in to the bench's client: a live browser session (both cookies) and a consent already given. */
  signer: { id: string; accessToken: string; refreshToken: string };
  loginIds: string[];
  refreshTokens: string[];
  /** A refresh token of the signer's at `OFFLINE_CLIENT_ID`, as a code with `offline_access` gives one. */
  oidcRefreshToken: string;
}

/**
 * The database variables of the run's servers: with `DATABASE_URL` (the bench's own database on
 * a PostgreSQL server, made by `run.ts`), PostgreSQL with mail kept in the outbox; else none: SQLite.
 */
export function benchDatabaseEnv(): Record<string, string> {
  return process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL, MAIL_OUTBOX: 'on' } : {};
}

/** The session secret, keys and every fixture the rows need, in a fresh data folder. */
export async function seed(dataDir: string, baseUrl: string): Promise<Seeded> {
  const config = loadConfig({ ...benchDatabaseEnv(), DATA_DIR: dataDir, BASE_URL: baseUrl });
  const db = openDatabase(config);
  try {
    await migrateToLatest(db);
    const services = await createServices(config, db, createLogger('silent'));
    try {
      const repo = new AccountsRepository(db);
      const user = (fullname: string, role?: 'superuser') =>
        services.signUp.createUser({ email: `${fullname.replace(/ /g, '.').toLowerCase()}@bench.example`, password: PASSWORD, fullname, state: 'Active', role });
      const session = async (id: string) => {
        const profile = await repo.profiles.find(id);
        if (!profile) throw new Error(`no profile ${id}`);
        // Six hours: longer than any run, so no token expires mid-measurement.
        return services.sessions.issueSession(profile, { loginEmail: id, accessSeconds: 6 * 60 * 60 });
      };

      const [admin, author, signer, refresher, ...logins] = await Promise.all([
        user('Bench Admin', 'superuser'),
        user('Bench Author'),
        user('Bench Signer'),
        user('Bench Refresher'),
        ...['Anna', 'Bert', 'Cleo', 'Dora'].slice(0, LOGIN_ACCOUNTS).map((first) => user(`${first} Login`)),
      ]);
      if (!admin || !author || !signer || !refresher) throw new Error('bench users were not created');
      const signerSession = await session(signer);
      const refreshTokens: string[] = [];
      for (let i = 0; i < REFRESH_SESSIONS; i += 1) refreshTokens.push((await session(refresher)).refreshToken);

      await services.oidc.addClient({ id: CLIENT_ID, name: 'Bench App', redirectUris: [REDIRECT_URI], scopes: SCOPES });
      await services.oidc.setClientStatus(CLIENT_ID, 'approved');
      const oidcRepo = new OidcRepository(db);
      await oidcRepo.widenConsent(signer, CLIENT_ID, SCOPES, Date.now());
      const oidcRefreshToken = await seedRefreshToken(oidcRepo, signer);

      await insertProfiles(db, [
        ...[1, 2, 3].map((number) => ({ first: TILDE_QUERY.first, last: TILDE_QUERY.last, number })),
        ...madeUpPeople(100 - 8 - 3, 1),
      ]);
      return {
        adminToken: (await session(admin)).accessToken,
        authorToken: (await session(author)).accessToken,
        authorId: author,
        signer: { id: signer, accessToken: signerSession.accessToken, refreshToken: signerSession.refreshToken },
        loginIds: logins,
        refreshTokens,
        oidcRefreshToken,
      };
    } finally {
      await services.close();
    }
  } finally {
    await db.destroy();
  }
}

/**
 * The offline client, the signer's consent to it with `offline_access`, and a refresh token as
 * the token endpoint starts a family (`oidc/refresh.ts`): what a sign-in with `prompt=consent`
 * would leave, without the pages.
 */
async function seedRefreshToken(repo: OidcRepository, signer: string): Promise<string> {
  const now = Date.now();
  const scopes: OidcScope[] = [...SCOPES, 'offline_access'];
  await repo.insertClient({ ...publicClientRecord({ id: OFFLINE_CLIENT_ID, name: 'Bench Offline App', redirectUris: [REDIRECT_URI], scopes }, now), status: 'approved', grantTypes: ['authorization_code', 'refresh_token'] });
  await repo.widenConsent(signer, OFFLINE_CLIENT_ID, scopes, now);
  const token = randomToken();
  const day = 24 * 3600 * 1000;
  await repo.refreshTokens.insert({
    tokenHash: hashSecret(token),
    familyId: randomToken(),
    clientId: OFFLINE_CLIENT_ID,
    profileId: signer,
    scopes,
    tokenVersion: 0,
    authTime: now,
    sid: null,
    createdAt: now,
    familyExpiresAt: now + 30 * day,
    expiresAt: now + 14 * day,
    usedAt: null,
    revokedAt: null,
  });
  return token;
}

/** Adds `count` made-up profiles to the database of a data folder (the server may be running). */
export async function addProfiles(dataDir: string, count: number): Promise<void> {
  const db = openDatabase(loadConfig({ ...benchDatabaseEnv(), DATA_DIR: dataDir }));
  try {
    await insertProfiles(db, madeUpPeople(count, 2));
  } finally {
    await db.destroy();
  }
}

interface Person {
  first: string;
  last: string;
  /** A fixed number, or the next free one for the name. */
  number?: number;
}

/**
 * Active profiles as `createUser` writes them (profile, username, email), without a password
 * (nobody logs in as them), in batches inside one transaction.
 */
async function insertProfiles(db: Knex, people: Person[]): Promise<void> {
  const now = Date.now();
  await db.transaction(async (trx) => {
    const taken = new Map<string, number>();
    for (const row of (await trx('profile_usernames').select('base').max({ top: 'number' }).groupBy('base')) as Array<{ base: string; top: number }>) {
      taken.set(row.base, Number(row.top));
    }
    const profiles: object[] = [];
    const usernames: object[] = [];
    const emails: object[] = [];
    for (const person of people) {
      const base = `~${person.first}_${person.last}`;
      const number = person.number ?? (taken.get(base) ?? 0) + 1;
      taken.set(base, Math.max(number, taken.get(base) ?? 0));
      const id = `${base}${number}`;
      const fullname = `${person.first} ${person.last}`;
      profiles.push({
        id,
        state: 'Active',
        password_hash: null,
        token_version: 0,
        content: JSON.stringify({ names: [{ first: person.first, middle: '', last: person.last, fullname, username: id, preferred: true }] }),
        past_states: JSON.stringify([{ state: 'Active', date: now, setBy: id }]),
        tcdate: now,
        tmdate: now,
      });
      usernames.push({ username: id, base, base_key: searchKey(base), number, profile_id: id });
      emails.push({ email: `${id.slice(1).toLowerCase()}@people.example`, profile_id: id, confirmed: true, created_at: now });
    }
    for (const [table, rows] of [['profiles', profiles], ['profile_usernames', usernames], ['profile_emails', emails]] as const) {
      for (let i = 0; i < rows.length; i += 500) await trx(table).insert(rows.slice(i, i + 500));
    }
  });
}

const SYLLABLES = ['ka', 'lo', 'mi', 'ren', 'sa', 'to', 'vi', 'an', 'el', 'or', 'du', 'ne', 'ra', 'bel', 'ti', 'mo'];

/**
 * Made-up names from syllables (about a million first-and-last pairs, so most names have one
 * or two holders, as real ones do), never `Ada Lovelace` or a bench user's name. `stream`
 * picks a different deterministic sequence for each call site.
 */
function madeUpPeople(count: number, stream: number): Person[] {
  let state = createHash('sha256').update(`bench-${stream}`).digest().readUInt32LE(0);
  const random = () => {
    // mulberry32: small, fast and deterministic, which is all a name generator needs.
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const syllable = () => SYLLABLES[Math.floor(random() * SYLLABLES.length)] ?? 'ka';
  const word = (n: number) => {
    const text = Array.from({ length: n }, syllable).join('');
    return text.charAt(0).toUpperCase() + text.slice(1);
  };
  return Array.from({ length: count }, () => ({ first: word(2), last: word(3) }));
}

/** A PKCE pair: the verifier and its S256 challenge. */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}
