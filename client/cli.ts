/**
 * `npm run cli -- <command>`: the service from a terminal, for people (operators use
 * `npm run admin`). Built on the same client a program would use.
 *
 *   login [--url URL] [--email EMAIL]        asks for the password; keeps the session
 *   whoami                                   who the kept session is
 *   upload FILE --invitation ID --name pdf   uploads with a progress bar; prints the URL
 *   download --note ID --name pdf -o FILE    saves a note's file, with a progress bar
 *   logout                                   ends the session and forgets it
 *
 * The session (the service's address and the access token) is kept in
 * `<config dir>/peer-review/session.json`, readable by its owner only (mode 0600). The config
 * dir is `$XDG_CONFIG_HOME` or `~/.config`, `%APPDATA%` on Windows, `~/Library/Application
 * Support` on macOS.
 */
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createWriteStream, openAsBlob } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline/promises';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { TRPCClientError } from '@trpc/client';
import cliProgress from 'cli-progress';
import { ApiError, createClient, MAX_SESSION_SECONDS, type Client, type Progress } from './index.ts';

interface Saved {
  baseUrl: string;
  token: string;
}

/** Where the session is kept, by the platform's convention for per-user configuration. */
export function sessionFile(env: NodeJS.ProcessEnv = process.env): string {
  const base =
    env.XDG_CONFIG_HOME ||
    (process.platform === 'win32' ? env.APPDATA || path.join(homedir(), 'AppData', 'Roaming') : undefined) ||
    (process.platform === 'darwin' ? path.join(homedir(), 'Library', 'Application Support') : path.join(homedir(), '.config'));
  return path.join(base, 'peer-review', 'session.json');
}

async function save(saved: Saved): Promise<void> {
  const file = sessionFile();
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  // Written to a new file created 0600, then moved into place: the token is never readable by others.
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, JSON.stringify(saved), { mode: 0o600 });
  await chmod(temporary, 0o600);
  await rename(temporary, file);
}

async function load(): Promise<Saved> {
  try {
    return JSON.parse(await readFile(sessionFile(), 'utf8')) as Saved;
  } catch {
    throw new Error('Not logged in: run `npm run cli -- login` first');
  }
}

async function signedIn(): Promise<Client> {
  const saved = await load();
  return createClient({ baseUrl: saved.baseUrl, token: saved.token });
}

/**
 * Lines from the terminal (a password without echo) or from piped input. One reader for the
 * whole run: two readers on one stdin would each buffer lines the other never sees.
 */
let muted = false;
let lines: AsyncIterator<string> | undefined;
async function ask(question: string, secret = false): Promise<string> {
  if (!lines) {
    const output = new Writable({
      write(chunk: Buffer, _encoding, done) {
        if (!muted) process.stderr.write(chunk);
        done();
      },
    });
    lines = createInterface({ input: process.stdin, output, terminal: Boolean(process.stdin.isTTY) })[Symbol.asyncIterator]();
  }
  process.stderr.write(question);
  muted = secret;
  try {
    const line = await lines.next();
    if (line.done) throw new Error(`No answer to "${question.trim()}" on the input`);
    return line.value.trim();
  } finally {
    muted = false;
    if (secret) process.stderr.write('\n');
  }
}

/** A progress bar with bytes, rate and time left, on stderr (stdout carries the result). */
function progressBar(label: string) {
  const bar = new cliProgress.SingleBar(
    {
      format: `${label} [{bar}] {percentage}% | {done}/{size} MB | {rate} MB/s | ETA {eta_formatted}`,
      hideCursor: true,
      noTTYOutput: true,
      notTTYSchedule: 1000,
      etaBuffer: 20,
    },
    cliProgress.Presets.shades_classic,
  );
  const started = Date.now();
  let begun = false;
  const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
  return {
    update(progress: Progress) {
      const seconds = Math.max(0.001, (Date.now() - started) / 1000);
      const payload = { done: mb(progress.loaded), size: mb(progress.total), rate: (progress.loaded / 2 ** 20 / seconds).toFixed(1) };
      if (!begun) {
        bar.start(progress.total, progress.loaded, payload);
        begun = true;
      } else bar.update(progress.loaded, payload);
    },
    stop() {
      if (begun) bar.stop();
    },
  };
}

const commands: Record<string, (args: string[]) => Promise<void>> = {
  async login(args) {
    const { values } = parseArgs({ args, options: { url: { type: 'string' }, email: { type: 'string' } } });
    const baseUrl = values.url ?? process.env.SERVICE_URL ?? 'http://127.0.0.1:3000';
    const email = values.email ?? (await ask('Email: '));
    const password = await ask('Password: ', true);
    const client = createClient({ baseUrl });
    const session = await client.login({ id: email, password, expiresIn: MAX_SESSION_SECONDS });
    await save({ baseUrl, token: session.token });
    console.log(`Logged in as ${session.user.profile.id} at ${baseUrl}`);
  },

  async whoami() {
    const client = await signedIn();
    const { profiles } = await client.api.accounts.profiles.query();
    const me = profiles[0];
    if (!me) throw new Error('The session has no profile');
    const name = me.content.names?.find((n) => n.preferred)?.fullname ?? me.content.names?.[0]?.fullname ?? '';
    console.log(`${me.id}${name ? ` (${name})` : ''} ${me.content.preferredEmail ?? me.content.emails?.[0] ?? ''}`.trim());
  },

  async upload(args) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: { invitation: { type: 'string' }, name: { type: 'string', default: 'pdf' }, 'chunk-mb': { type: 'string' } },
    });
    const file = positionals[0];
    if (!file || !values.invitation) throw new Error('Usage: upload FILE --invitation ID [--name pdf]');
    const client = await signedIn();
    const bar = progressBar('Uploading');
    const controller = new AbortController();
    process.once('SIGINT', () => controller.abort(new Error('Cancelled; run the same command again to resume')));
    try {
      const { url } = await client.attachments.upload(await openAsBlob(file), {
        invitationId: values.invitation,
        name: values.name,
        filename: path.basename(file),
        ...(values['chunk-mb'] ? { chunkSize: Number(values['chunk-mb']) * 2 ** 20 } : {}),
        onProgress: (p) => bar.update(p),
        signal: controller.signal,
      });
      bar.stop();
      console.log(url);
    } finally {
      bar.stop();
    }
  },

  async download(args) {
    const { values } = parseArgs({
      args,
      options: { note: { type: 'string' }, name: { type: 'string', default: 'pdf' }, output: { type: 'string', short: 'o' } },
    });
    if (!values.note) throw new Error('Usage: download --note ID [--name pdf] [-o FILE]');
    const client = await signedIn();
    const bar = progressBar('Downloading');
    const file = await client.attachments.download({ id: values.note, name: values.name, onProgress: (p) => bar.update(p) });
    const target = values.output ?? file.filename;
    // Into a neighbour first: a failed download leaves no partial file under the name asked for.
    const partial = `${target}.part`;
    try {
      await pipeline(Readable.fromWeb(file.stream as import('node:stream/web').ReadableStream<Uint8Array>), createWriteStream(partial));
      await rename(partial, target);
    } catch (error) {
      await rm(partial, { force: true });
      throw error;
    } finally {
      bar.stop();
    }
    console.log(target);
  },

  async logout() {
    const client = await signedIn();
    // The session may have expired already: it is forgotten here either way.
    await client.logout().catch(() => undefined);
    await rm(sessionFile(), { force: true });
    console.log('Logged out');
  },
};

/** The message a person should see for a failure. */
function describe(error: unknown): string {
  if (error instanceof ApiError) return `${error.name}: ${error.message}`;
  if (error instanceof TRPCClientError) {
    const body = (error.data as { error?: { name?: string; status?: number } } | undefined)?.error;
    if (body?.status === 401) return `${body.name}: ${error.message}. Run \`npm run cli -- login\` again.`;
    return `${body?.name ?? 'Error'}: ${error.message}`;
  }
  if (error instanceof TypeError && /fetch failed/.test(error.message)) return `Cannot reach the service (${String(error.cause ?? error.message)})`;
  return error instanceof Error ? error.message : String(error);
}

const [command = 'help', ...rest] = process.argv.slice(2);
const run = commands[command];
if (!run) {
  console.error('Commands: login [--url URL] [--email EMAIL] | whoami | upload FILE --invitation ID [--name pdf] | download --note ID [--name pdf] [-o FILE] | logout');
  process.exitCode = command === 'help' ? 0 : 2;
} else {
  try {
    await run(rest);
  } catch (error) {
    console.error(describe(error));
    process.exitCode = 1;
  }
}
