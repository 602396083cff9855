import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { TEST_POSTGRES_URL } from '../helpers/database.ts';
import { runAdmin } from '../helpers/admin.ts';
import { childEnv, startServer, tempDir, type TestServer } from '../helpers/server.ts';

/** Each test runs `npm run admin` several times, a Node process each (about a second of start-up, far more on a loaded machine). */
const LONG = { timeout: 120_000 };

const run = promisify(execFile);
let dir: string;
let server: TestServer;

/** Runs `npm run admin -- ...` as an operator would, on this test's data folder. */
const admin = (...args: string[]) => runAdmin({ DATA_DIR: dir }, ...args);

beforeAll(async () => {
  dir = await tempDir();
  server = await startServer({}, dir);
});
afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

describe('npm run admin', () => {
  it('user add creates an active user while the server runs, and prints its tilde id', LONG, async () => {
    const res = await admin('user', 'add', '--email', 'root@example.org', '--password', 'Operator-Pass1', '--fullname', 'Root Operator', '--role', 'superuser');
    expect(res).toMatchObject({ code: 0, stdout: '~Root_Operator1\n' });
    expect(res.stderr).not.toContain('Operator-Pass1');
    expect(res.stderr).toContain('prefer --password-stdin');

    const login = await new Client(server.url).post('/login', { id: 'root@example.org', password: 'Operator-Pass1' });
    expect(login.status).toBe(200);
    expect(login.body.user.profile).toMatchObject({ id: '~Root_Operator1', state: 'Active' });
    expect(await server.service.db('group_members').where({ group_id: 'Service/Superusers' }).pluck('member')).toEqual(['~Root_Operator1']);
  });

  it('user list shows every profile', LONG, async () => {
    await admin('user', 'add', '--email', 'mod@example.org', '--password', 'Moderator-Pass1', '--fullname', 'Mo Derator', '--role', 'moderator');
    const res = await admin('user', 'list');
    expect(res.code).toBe(0);
    expect(res.stdout).toBe('~Root_Operator1\tActive\troot@example.org\n~Mo_Derator1\tActive\tmod@example.org\n');
  });

  it('refuses a weak password, a taken email and a bad role with a clear message', LONG, async () => {
    const weak = await admin('user', 'add', '--email', 'x@example.org', '--password', 'weak', '--fullname', 'X Y');
    expect(weak.code).toBe(1);
    expect(weak.stderr).toMatch(/error: password: /);
    const taken = await admin('user', 'add', '--email', 'root@example.org', '--password', 'Operator-Pass1', '--fullname', 'Root Again');
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain('error: The email root@example.org is already in use');
    const role = await admin('user', 'add', '--email', 'y@example.org', '--password', 'Operator-Pass1', '--fullname', 'Y Z', '--role', 'king');
    expect(role.code).toBe(1);
    expect(role.stderr).toMatch(/error: role: /);
    expect((await admin('user', 'list')).stdout.split('\n').filter(Boolean)).toHaveLength(2);
  });

  it('an unknown command prints the usage and fails; --help prints it and succeeds; extra arguments are refused', LONG, async () => {
    const res = await admin('user', 'delete');
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('Usage: npm run admin');
    for (const asked of ['--help', '-h', 'help']) expect(await admin(asked)).toMatchObject({ code: 0, stdout: expect.stringContaining('Usage: npm run admin') });
    const extra = await admin('user', 'list', 'extra', 'junk');
    expect(extra.code).toBe(2);
    expect(extra.stderr).toContain('error: user list takes no arguments (given: extra junk)');
  });

  it('a setting that cannot be used is said in one line, without a stack, and exits 1', LONG, async () => {
    const res = await runAdmin({ DATA_DIR: dir, PORT: '' }, 'user', 'list');
    expect(res.code).toBe(1);
    expect(res.stderr).toBe('Invalid configuration:\n  PORT: must be a whole number in decimal digits\n');
  });

  it('a database server that hangs up at once: one line, exit 1, no stack (the driver\'s error has no code)', LONG, async () => {
    const { createServer } = await import('node:net');
    const hangsUp = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => hangsUp.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = hangsUp.address() as { port: number };
      const res = await runAdmin({ DATABASE_URL: `postgres://someone:secret-pw@127.0.0.1:${port}/nothing`, MAIL_OUTBOX: 'on' }, 'user', 'list');
      expect(res.code).toBe(1);
      expect(res.stdout).toBe('');
      expect(res.stderr).toMatch(/^(knex: [^\n]+\n)*error: the database cannot be used: [^\n]+\n$/);
      expect(res.stderr).not.toMatch(/secret-pw|\n\s+at /);
    } finally {
      hangsUp.close();
    }
  });

  it('a database that does not answer, a data folder or backup that cannot be used: one line with its code, exit 1, no stack', LONG, async () => {
    const file = `${dir}/not-a-folder`;
    await (await import('node:fs/promises')).writeFile(file, '');
    const runs = await Promise.all([
      runAdmin({ DATABASE_URL: 'postgres://someone:secret-pw@127.0.0.1:1/nothing', MAIL_OUTBOX: 'on' }, 'user', 'list'),
      runAdmin({ DATA_DIR: `${file}/sub` }, 'user', 'list'),
      // A restore is of an embedded install (on PostgreSQL, refused before it reads its folder).
      ...(TEST_POSTGRES_URL ? [] : [runAdmin({ DATA_DIR: `${dir}/restored` }, 'restore', '--from', file)]),
    ]);
    for (const [i, res] of runs.entries()) {
      expect(res.code, `${i}: ${res.stderr}`).toBe(1);
      // Knex's own warning about the connection, if any, is one line on stderr; stdout stays the command's.
      expect(res.stdout, String(i)).toBe('');
      expect(res.stderr, String(i)).toMatch(/^(knex: [^\n]+\n)*error: [^\n]+ \((E[A-Z_]+|SQLITE_[A-Z_]+)\)\n$/);
      expect(res.stderr).not.toMatch(/secret-pw|\n\s+at /);
    }
    expect(runs.map((res) => /\(([A-Z_]+)\)\n$/.exec(res.stderr)?.[1])).toEqual(['ECONNREFUSED', 'ENOTDIR', 'ENOTDIR'].slice(0, runs.length));
  });
});

describe('npm run migrate', () => {
  it('creates and migrates the database of DATA_DIR', LONG, async () => {
    const fresh = await tempDir();
    try {
      const { stdout } = await run(process.execPath, ['db/migrate.ts'], { env: await childEnv({ DATA_DIR: fresh }) });
      expect(stdout).toBe(`Database ${TEST_POSTGRES_URL ? '(PostgreSQL)' : `at ${fresh}`} is up to date (0 pending).\n`);
    } finally {
      await rm(fresh, { recursive: true, force: true });
    }
  });
});

describe('npm run admin settings and institutions', () => {
  it('switches moderation on and off', LONG, async () => {
    expect((await admin('settings', 'get', 'moderation')).stdout).toBe('moderation off\n');
    expect((await admin('settings', 'set', 'moderation', 'on')).stdout).toBe('moderation on\n');
    expect(await server.service.services.activation.moderation()).toBe(true);
    expect((await admin('settings', 'set', 'moderation', 'off')).stdout).toBe('moderation off\n');
    const bad = await admin('settings', 'set', 'moderation', 'maybe');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('Usage: settings set moderation on|off');
  });

  it('adds an institution, which then makes its emails institutional', LONG, async () => {
    const res = await admin('institution', 'add', '--domain', 'Example-University.EDU', '--name', 'Example University', '--country', 'Nowhere');
    expect(res).toMatchObject({ code: 0, stdout: 'example-university.edu\n' });
    expect((await admin('institution', 'list')).stdout.split('\n')).toContain('example-university.edu');
    const bad = await admin('institution', 'add', '--domain', 'not a domain', '--name', 'X');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/error: domain: /);
  });
});

describe('npm run admin oidc-client and oidc-keys', () => {
  it('adds, lists, approves, rejects and removes a client; rotates keys', LONG, async () => {
    const add = await admin('oidc-client', 'add', '--id', 'cli-app', '--name', 'CLI App', '--redirect-uri', 'https://app.example.org/cb', '--redirect-uri', 'https://app.example.org/cb2', '--scopes', 'openid email');
    expect(add).toMatchObject({ code: 0, stdout: 'cli-app\tpending\n' });
    expect((await admin('oidc-client', 'approve', 'cli-app')).stdout).toBe('cli-app\tapproved\tCLI App\topenid email\thttps://app.example.org/cb https://app.example.org/cb2\n');
    expect((await admin('oidc-client', 'list')).stdout).toBe('cli-app\tapproved\tCLI App\topenid email\thttps://app.example.org/cb https://app.example.org/cb2\n');
    expect((await admin('oidc-client', 'reject', 'cli-app')).stdout).toBe('cli-app\trejected\n');
    expect((await admin('oidc-client', 'remove', 'cli-app')).stdout).toBe('cli-app\tremoved\n');
    expect((await admin('oidc-client', 'list')).stdout).toBe('');
    const missing = await admin('oidc-client', 'approve', 'nobody');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('Client Not Found: nobody');
    const bad = await admin('oidc-client', 'add', '--id', 'x', '--name', 'X', '--redirect-uri', 'not a url', '--scopes', 'email');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/error: redirectUris\/0: /);
    expect(bad.stderr).toMatch(/error: scopes: The scopes must include openid/);
    const kid = (await admin('oidc-keys', 'rotate')).stdout.trim();
    expect(kid).toMatch(/^[\w-]{43}$/);
    const jwks = (await (await fetch(`${server.url}/oidc/jwks`)).json()) as { keys: Array<{ kid: string; d?: string }> };
    expect(jwks.keys.map((k) => k.kid)).toContain(kid);
    expect(jwks.keys.every((k) => k.d === undefined)).toBe(true);
  });
});

describe('npm run admin user add, the password', () => {
  it('user add --password-stdin reads the password from standard input, never from the command line', LONG, async () => {
    const child = execFile(process.execPath, ['server/cli/admin.ts', 'user', 'add', '--email', 'stdin@example.org', '--password-stdin', '--fullname', 'Stdin Operator'], { env: await childEnv({ DATA_DIR: dir }) });
    const output = { stdout: '', stderr: '' };
    child.stdout?.on('data', (chunk: Buffer) => (output.stdout += String(chunk)));
    child.stderr?.on('data', (chunk: Buffer) => (output.stderr += String(chunk)));
    child.stdin?.end('Piped-Secret-Pass1\nignored second line\n');
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect({ code, ...output }).toMatchObject({ code: 0, stdout: '~Stdin_Operator1\n' });
    expect(output.stderr).not.toContain('prefer --password-stdin');
    expect((await new Client(server.url).post('/login', { id: 'stdin@example.org', password: 'Piped-Secret-Pass1' })).status).toBe(200);
    const both = await admin('user', 'add', '--email', 'both@example.org', '--password', 'x', '--password-stdin', '--fullname', 'Both Ways');
    expect(both.code).not.toBe(0);
    expect(both.stderr).toContain('Give --password or --password-stdin, not both');
  });
});
