import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { migrateToLatest, type Db } from '../../db/knex.ts';
import { advisoryKey } from '../../db/postgres.ts';
import { migrations } from '../../db/migrations/index.ts';
import { openTestDatabase, TEST_POSTGRES_URL } from '../helpers/database.ts';
import { childEnv, tempDir } from '../helpers/server.ts';

const run = promisify(execFile);

let db: Db | undefined;
let dir: string | undefined;

afterEach(async () => {
  await db?.destroy();
  if (dir) await rm(dir, { recursive: true, force: true });
  db = undefined;
});

async function fresh(): Promise<Db> {
  dir = await tempDir();
  db = await openTestDatabase(dir);
  return db;
}

describe('migrations', () => {
  it('run latest → rollback → latest on a fresh database', async () => {
    const db = await fresh();
    await migrateToLatest(db);
    expect(await db.schema.hasTable('profiles')).toBe(true);
    await db.migrate.rollback(undefined, true);
    for (const table of ['profiles', 'profile_emails', 'groups', 'sessions', 'account_tokens', 'settings']) {
      expect(await db.schema.hasTable(table)).toBe(false);
    }
    await migrateToLatest(db);
    const [done, pending] = await db.migrate.list();
    expect(done).toHaveLength(migrations.length);
    expect(pending).toHaveLength(0);
  });

  it("fill a username's search key from the usernames written before it, in every script", async () => {
    const db = await fresh();
    await migrateToLatest(db);
    await db.migrate.down({ name: '20261129000000_username_search_key' });
    expect(await db.schema.hasColumn('profile_usernames', 'base_key')).toBe(false);
    const profile = (id: string) => ({ id, state: 'Active', token_version: 0, content: '{}', past_states: '[]', tcdate: 0, tmdate: 0 });
    await db('profiles').insert([profile('~Ada_Lovelace1'), profile('~Élodie_DUPONT1'), profile('~Иван_Петров1')]);
    await db('profile_usernames').insert([
      { username: '~Ada_Lovelace1', base: '~Ada_Lovelace', number: 1, profile_id: '~Ada_Lovelace1' },
      // "É" written decomposed (E and a combining accent), as some keyboards send it.
      { username: '~Élodie_DUPONT1', base: '~E\u0301lodie_DUPONT', number: 1, profile_id: '~Élodie_DUPONT1' },
      { username: '~Иван_Петров1', base: '~Иван_Петров', number: 1, profile_id: '~Иван_Петров1' },
    ]);
    await migrateToLatest(db);
    expect(await db('profile_usernames').orderBy('username').select('username', 'base_key')).toEqual([
      { username: '~Ada_Lovelace1', base_key: '~ada_lovelace' },
      { username: '~Élodie_DUPONT1', base_key: '~élodie_dupont' },
      { username: '~Иван_Петров1', base_key: '~иван_петров' },
    ]);
  });

  it("record an approved registration never changed since as approved by its token, and any other approval as an operator's", async () => {
    const db = await fresh();
    await migrateToLatest(db);
    await db.migrate.down({ name: '20261129200000_oidc_client_approved_by_token' });
    const client = (id: string, status: string, tokenHash: string | null, updatedAt: number) => ({ id, name: id, redirect_uris: '[]', scopes: '["openid"]', status, registration_token_hash: tokenHash, created_at: 1000, updated_at: updatedAt });
    await db('oidc_clients').insert([
      client('by-token', 'approved', 'a'.repeat(64), 1000),
      client('reviewed', 'approved', 'b'.repeat(64), 2000),
      client('waiting', 'pending', 'c'.repeat(64), 1000),
      client('operators', 'approved', null, 1000),
    ]);
    await migrateToLatest(db);
    const rows = await db('oidc_clients').orderBy('id').select('id', 'approved_by_token');
    expect(rows.map((row: { id: string; approved_by_token: unknown }) => [row.id, Boolean(row.approved_by_token)])).toEqual([
      ['by-token', true],
      ['operators', false],
      ['reviewed', false],
      ['waiting', false],
    ]);
  });

  it('fold final uploads of the same parts into one, the one holding its file first, then refuse a second, whatever the header\'s length', async () => {
    const db = await fresh();
    await migrateToLatest(db);
    await db.migrate.down({ name: '20261129220000_tus_final_once' });
    const row = (id: string, profile: string, header: string, createdAt: number, url: string | null = null) => ({
      id, profile_id: profile, invitation: 'I', field: 'pdf', extension: 'pdf', metadata: '', upload_length: 10, upload_offset: 10, concat: 'final', concat_header: header, url, created_at: createdAt, expires_at: createdAt + 1,
    });
    const part = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
    const xy = `final;/attachment/tus/${part(1)} /attachment/tus/${part(2)}`;
    // The same parts as absolute URLs, and a header of many parts, past what PostgreSQL indexes (2,704 bytes).
    const absolute = `final;https://review.example.org/attachment/tus/${part(1)}  https://review.example.org/attachment/tus/${part(2)}`;
    const many = `final;${Array.from({ length: 80 }, (_, i) => `https://review.example.org/${'p'.repeat(20)}/attachment/tus/${part(i + 10)}`).join(' ')}`;
    expect(many.length).toBeGreaterThan(2704);
    await db('tus_uploads').insert([
      row('a1', '~A1', xy, 1), row('a2', '~A1', absolute, 2, 'a.pdf'), row('a3', '~A1', xy, 3),
      row('b1', '~B1', xy, 1), row('b2', '~B1', xy, 2),
      row('c1', '~A1', `final;/attachment/tus/${part(3)}`, 1),
      row('m1', '~A1', many, 1),
    ]);
    await migrateToLatest(db);
    expect(await db('tus_uploads').orderBy('id').pluck('id')).toEqual(['a2', 'b1', 'c1', 'm1']);
    const keyOf = async (id: string) => ((await db('tus_uploads').where({ id }).first()) as { concat_key: string }).concat_key;
    await expect(db('tus_uploads').insert({ ...row('b3', '~B1', xy, 4), concat_key: await keyOf('b1') })).rejects.toThrow();
    // Partial and ordinary uploads are not concerned.
    await db('tus_uploads').insert([{ ...row('p1', '~B1', 'x', 5), concat: 'partial' }, { ...row('p2', '~B1', 'x', 5), concat: 'partial' }]);
  });

  it.each([
    ['sessions', 'session_refresh_rotated', "records a session's rotated-out refresh token"],
    ['oidc_refresh_tokens', 'oidc_refresh_access_token', 'stores the access token a refresh-token rotation gives'],
    ['upload_chunks', 'upload_chunk_counted', "counts a recorded chunk's bytes into its upload"],
  ])('leave the trigger on %s in place (%s: it %s; a table rebuilt by a later migration would lose it)', async (table, trigger) => {
    const db = await fresh();
    await migrateToLatest(db);
    const triggers = TEST_POSTGRES_URL
      ? ((await db.raw('select tgname as name from pg_trigger where tgrelid = ?::regclass and not tgisinternal', [table])) as { rows: Array<{ name: string }> }).rows
      : ((await db.raw("select name from sqlite_master where type = 'trigger' and tbl_name = ?", [table])) as Array<{ name: string }>);
    expect(triggers.map((t) => t.name)).toEqual([trigger]);
  });

  it('run from several processes at once on a new data folder: they take turns, and leave one lock row', async () => {
    const db = await fresh();
    const migrate = async () => run(process.execPath, ['db/migrate.ts'], { env: await childEnv({ DATA_DIR: dir! }) }).then(({ stdout }) => stdout.trim(), (e: { stderr: string }) => e.stderr);
    const outputs = await Promise.all(Array.from({ length: 5 }, migrate));
    expect(outputs).toEqual(Array(5).fill(`Database ${TEST_POSTGRES_URL ? '(PostgreSQL)' : `at ${dir}`} is up to date (0 pending).`));
    const [done, pending] = await db.migrate.list();
    expect([done.length, pending.length]).toEqual([migrations.length, 0]);
    expect(await db('knex_migrations_lock').select('is_locked')).toEqual([{ is_locked: 0 }]);
  }, 60_000);

  it.runIf(TEST_POSTGRES_URL)('leave no varchar column on PostgreSQL: lengths are the request schemas\' (a profile id may pass 300 characters)', async () => {
    const db = await fresh();
    await migrateToLatest(db);
    const { rows } = (await db.raw(
      "select table_name || '.' || column_name as name from information_schema.columns where table_schema = current_schema() and data_type = 'character varying' and table_name not like 'knex\\_%'",
    )) as { rows: Array<{ name: string }> };
    expect(rows.map((r) => r.name)).toEqual([]);
  });

  it.runIf(TEST_POSTGRES_URL)('wait on PostgreSQL for another process\'s migration however long it takes (past the connections\' 5 s lock timeout)', async () => {
    const db = await fresh();
    await migrateToLatest(db);
    // Another process holding the migrations' lock for six seconds, as a long migration would.
    const holding = db.transaction(async (trx) => {
      await trx.raw('select pg_advisory_xact_lock(?::bigint)', [advisoryKey('migrations')]);
      await new Promise((resolve) => setTimeout(resolve, 6_000));
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await migrateToLatest(db);
    await holding;
  }, 30_000);

  it('record a migration under the name this version gives it, when an install recorded an earlier one', async () => {
    const db = await fresh();
    await migrateToLatest(db);
    await db('knex_migrations').where({ name: '20261123020000_note_deletion' }).update({ name: '20261123000000_note_deletion' });
    await migrateToLatest(db);
    const [done, pending] = await db.migrate.list();
    expect([done.length, pending.length]).toEqual([migrations.length, 0]);
    expect(await db('knex_migrations').where({ name: '20261123000000_note_deletion' })).toEqual([]);
  });

  it.skipIf(TEST_POSTGRES_URL)('opens SQLite with foreign keys and WAL on', async () => {
    const db = await fresh();
    expect(await db.raw('PRAGMA foreign_keys')).toEqual([{ foreign_keys: 1 }]);
    expect(await db.raw('PRAGMA journal_mode')).toEqual([{ journal_mode: 'wal' }]);
    await migrateToLatest(db);
    // A session for a profile that does not exist is refused by the foreign key.
    await expect(
      db('sessions').insert({ id: 's', profile_id: '~Nobody1', login_email: 'x', refresh_hash: 'h', token_version: 0, access_seconds: 1, created_at: 0, expires_at: 0 }),
    ).rejects.toThrow(/FOREIGN KEY/);
  });
});
