/**
 * `npm run cli`: a person logs in, asks who they are, uploads with a progress bar, downloads,
 * and logs out, against the real server, with the session kept in a 0600 file.
 */
import { spawn } from 'node:child_process';
import { chmod, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pdfBytes, sha1, SUBMISSION, submissionContent, venueWithAuthor } from '../attachments/helpers.ts';
import { loggedIn, PASSWORD, createActiveUser } from '../helpers/users.ts';
import { childEnv, startServer, tempDir, type TestServer } from '../helpers/server.ts';

/** Each test runs the command-line client as a process of its own, some with megabytes to send. */
const LONG = { timeout: 60_000 };

let server: TestServer;
let home: string;
let work: string;
let email: string;
const MB = 1024 * 1024;

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `npm run cli -- ...args` as a person would type it, with `input` on stdin. */
async function cli(args: string[], input = ''): Promise<Outcome> {
  const env = await childEnv({ XDG_CONFIG_HOME: home });
  return new Promise((resolve, reject) => {
    const child = spawn('npm', ['run', '--silent', 'cli', '--', ...args], {
      cwd: path.resolve(import.meta.dirname, '../..'),
      env,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

const sessionFile = () => path.join(home, 'peer-review', 'session.json');

beforeAll(async () => {
  server = await startServer();
  await venueWithAuthor(server);
  email = (await createActiveUser(server, { fullname: 'Terminal Person' })).email;
  home = await tempDir('cli-home-');
  work = await tempDir('cli-work-');
});
afterAll(() => server.close());

describe('npm run cli', () => {
  it('refuses a wrong password, and keeps nothing', LONG, async () => {
    const res = await cli(['login', '--url', server.url, '--email', email], 'not-the-password\n');
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/BadRequestError/);
    expect(res.stderr).not.toContain('not-the-password');
    await expect(stat(sessionFile())).rejects.toThrow(/ENOENT/);
  });

  it('says to log in first when there is no session', LONG, async () => {
    const res = await cli(['whoami']);
    expect(res).toMatchObject({ code: 1, stderr: expect.stringContaining('Not logged in') });
  });

  it('logs in with the password from stdin and keeps the session in a file only its owner can read', LONG, async () => {
    const res = await cli(['login', '--url', server.url], `${email}\n${PASSWORD}\n`);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^Logged in as ~Terminal_Person\d+ at http/);
    expect(res.stdout + res.stderr).not.toContain(PASSWORD);
    const info = await stat(sessionFile());
    expect(info.mode & 0o777).toBe(0o600);
    expect((await stat(path.dirname(sessionFile()))).mode & 0o777).toBe(0o700);
    const saved = JSON.parse(await readFile(sessionFile(), 'utf8')) as { baseUrl: string; token: string };
    expect(saved).toEqual({ baseUrl: server.url, token: expect.any(String) });
    expect(res.stdout + res.stderr).not.toContain(saved.token);
  });

  it('whoami names the person of the kept session', LONG, async () => {
    const res = await cli(['whoami']);
    expect(res.code).toBe(0);
    expect(res.stdout.trim()).toMatch(new RegExp(`^~Terminal_Person\\d+ \\(Terminal Person\\) ${email.replace(/[.]/g, '\\.')}$`));
  });

  it('uploads with a progress bar (bytes, rate, time left) and prints the URL; downloads the same bytes', LONG, async () => {
    const data = pdfBytes(12 * MB);
    const file = path.join(work, 'paper.pdf');
    await writeFile(file, data);
    const up = await cli(['upload', file, '--invitation', SUBMISSION, '--name', 'pdf', '--chunk-mb', '2']);
    expect(up.stderr).toMatch(/Uploading \[.*\] 100% \| 12\.0\/12\.0 MB \| [\d.]+ MB\/s \| ETA \d+s/);
    expect(up.code).toBe(0);
    const url = up.stdout.trim();
    expect(url).toMatch(/^\/pdf\/[0-9a-f]{40}\.pdf$/);

    const { client } = await loggedIn(server, email);
    const me = (await client.get('/profiles')).body.profiles[0].id as string;
    const note = await client.post('/notes', { invitation: SUBMISSION, content: submissionContent(me, url) });
    expect(note.status).toBe(200);

    const saved = path.join(work, 'copy.pdf');
    const down = await cli(['download', '--note', note.body.id, '--name', 'pdf', '-o', saved]);
    expect(down.code).toBe(0);
    expect(down.stdout.trim()).toBe(saved);
    expect(down.stderr).toMatch(/Downloading \[.*\] 100%/);
    expect(sha1(await readFile(saved))).toBe(sha1(data));
  });

  it('refuses a file of the wrong type before sending it, and a missing note leaves no file behind', LONG, async () => {
    const text = path.join(work, 'notes.txt');
    await writeFile(text, 'not a pdf');
    const up = await cli(['upload', text, '--invitation', SUBMISSION]);
    expect(up).toMatchObject({ code: 1, stderr: expect.stringContaining('ValidationError: The file must be of type pdf') });

    const before = await readdir(work);
    const down = await cli(['download', '--note', 'no-such-note', '-o', path.join(work, 'missing.pdf')]);
    expect(down).toMatchObject({ code: 1, stderr: expect.stringContaining('NotFoundError') });
    expect(await readdir(work)).toEqual(before);
  });

  it('refuses a session file others can read, as ssh refuses such a key', LONG, async () => {
    await chmod(sessionFile(), 0o644);
    const res = await cli(['whoami']);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/can be read by others: run `chmod 600/);
    await chmod(sessionFile(), 0o600);
    expect((await cli(['whoami'])).code).toBe(0);
  });

  it('stops an upload on Ctrl-C with status 130, and the same command resumes it', LONG, async () => {
    const file = path.join(work, 'interrupted.pdf');
    await writeFile(file, pdfBytes(24 * MB));
    const args = ['client/cli.ts', 'upload', file, '--invitation', SUBMISSION, '--chunk-mb', '1'];
    const child = spawn(process.execPath, args, { cwd: path.resolve(import.meta.dirname, '../..'), env: await childEnv({ XDG_CONFIG_HOME: home }) });
    let stderr = '';
    // Interrupted as soon as its progress bar shows: it has started sending.
    await new Promise<void>((resolve) =>
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        if (stderr.includes('Uploading')) resolve();
      }),
    );
    child.kill('SIGINT');
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).toBe(130);
    expect(stderr).toContain('Cancelled; run the same command again to resume');

    const again = await cli(['upload', file, '--invitation', SUBMISSION, '--chunk-mb', '1']);
    expect(again.code).toBe(0);
    expect(again.stdout.trim()).toMatch(/^\/pdf\/[0-9a-f]{40}\.pdf$/);
  });

  it('logs out: the session ends and the file is gone', LONG, async () => {
    const saved = JSON.parse(await readFile(sessionFile(), 'utf8')) as { token: string };
    const res = await cli(['logout']);
    expect(res).toMatchObject({ code: 0, stdout: 'Logged out\n' });
    await expect(stat(sessionFile())).rejects.toThrow(/ENOENT/);
    const stale = await fetch(`${server.url}/profiles`, { headers: { authorization: `Bearer ${saved.token}` } });
    expect(stale.status).toBe(401);
  });
});
