/**
 * `npm run cli -- <command>`: the service from a terminal, for people (operators use
 * `npm run admin`). Built on the same client a program would use.
 *
 *   login [--url URL] [--email EMAIL]        asks for the password; keeps the session
 *   whoami                                   who the kept session is
 *   upload FILE --invitation ID --name pdf   uploads with a progress bar; prints the URL
 *          [--chunk-mb 5] [--human-token T]  (Ctrl-C stops it; the same command resumes it)
 *   download --note ID --name pdf -o FILE    saves a note's file, with a progress bar
 *   logout                                   ends the session and forgets it
 *
 * The session (the service's address and the access token) is kept in
 * `<config dir>/peer-review/session.json`, readable by its owner only (mode 0600). The config
 * dir is `$XDG_CONFIG_HOME` or `~/.config`, `%APPDATA%` on Windows, `~/Library/Application
 * Support` on macOS. A session file others can read is refused, as ssh refuses such a key. The
 * session lasts a week (the longest the service gives); then `login` again.
 */
import { chmod, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createWriteStream, openAsBlob } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline/promises';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { TRPCClientError } from '@trpc/client';
import cliProgress from 'cli-progress';
import { z } from 'zod';
import { ApiError, createClient, MAX_SESSION_SECONDS, type Client, type Progress } from './index.ts';

/** What the session file holds. */
const Saved = z.strictObject({ baseUrl: z.url(), token: z.string().min(1) });
type Saved = z.infer<typeof Saved>;

/** Ctrl-C: the conventional exit status of a process stopped by SIGINT. */
const INTERRUPTED = 130;

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
  await chmod(path.dirname(file), 0o700);
  // A new file, created 0600 (never one left behind), then moved into place: the token is never
  // readable by others, not even for a moment.
  const temporary = `${file}.${process.pid}.${Date.now()}.tmp`;
  try {
    await writeFile(temporary, JSON.stringify(saved), { mode: 0o600, flag: 'wx' });
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

async function load(): Promise<Saved> {
  const file = sessionFile();
  let text: string;
  try {
    // As ssh does with a private key: a session file others can read is not used.
    if (process.platform !== 'win32' && ((await stat(file)).mode & 0o077) !== 0) {
      throw new Error(`${file} can be read by others: run \`chmod 600 ${file}\` or log in again`);
    }
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new Error('Not logged in: run `npm run cli -- login` first');
    throw error;
  }
  let saved;
  try {
    saved = Saved.safeParse(JSON.parse(text));
  } catch {
    saved = null;
  }
  if (!saved?.success) throw new Error(`${file} is not a session this command wrote: log in again`);
  return saved.data;
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
  // Bytes already there when a resumed upload starts are not part of this run's rate.
  let before = 0;
  const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
  return {
    update(progress: Progress) {
      if (!begun) before = progress.loaded;
      const seconds = Math.max(0.001, (Date.now() - started) / 1000);
      const payload = { done: mb(progress.loaded), size: mb(progress.total), rate: ((progress.loaded - before) / 2 ** 20 / seconds).toFixed(1) };
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

/** A signal that Ctrl-C aborts (and the exit status then says so). */
function cancelOnCtrlC(message: string): AbortSignal {
  const controller = new AbortController();
  process.once('SIGINT', () => {
    process.exitCode = INTERRUPTED;
    controller.abort(new Error(message));
  });
  return controller.signal;
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
      options: {
        invitation: { type: 'string' },
        name: { type: 'string', default: 'pdf' },
        'chunk-mb': { type: 'string' },
        'human-token': { type: 'string' },
      },
    });
    const file = positionals[0];
    if (!file || !values.invitation) throw new Error('Usage: upload FILE --invitation ID [--name pdf] [--chunk-mb 5] [--human-token TOKEN]');
    const chunkMb = values['chunk-mb'] === undefined ? undefined : Number(values['chunk-mb']);
    if (chunkMb !== undefined && !(chunkMb > 0 && Number.isFinite(chunkMb))) throw new Error('--chunk-mb must be a positive number of megabytes');
    const client = await signedIn();
    const bar = progressBar('Uploading');
    const signal = cancelOnCtrlC('Cancelled; run the same command again to resume');
    let url: string;
    try {
      ({ url } = await client.attachments.upload(await openAsBlob(file), {
        invitationId: values.invitation,
        name: values.name,
        filename: path.basename(file),
        ...(chunkMb ? { chunkSize: Math.round(chunkMb * 2 ** 20) } : {}),
        ...(values['human-token'] ? { humanVerificationToken: values['human-token'] } : {}),
        onProgress: (p) => bar.update(p),
        signal,
      }));
    } finally {
      bar.stop();
    }
    console.log(url);
  },

  async download(args) {
    const { values } = parseArgs({
      args,
      options: { note: { type: 'string' }, name: { type: 'string', default: 'pdf' }, output: { type: 'string', short: 'o' } },
    });
    if (!values.note) throw new Error('Usage: download --note ID [--name pdf] [-o FILE]');
    const client = await signedIn();
    const bar = progressBar('Downloading');
    const signal = cancelOnCtrlC('Cancelled');
    const file = await client.attachments.download({ id: values.note, name: values.name, onProgress: (p) => bar.update(p), signal });
    // The server's name for the file is only a name: never a path somewhere else.
    const target = values.output ?? path.basename(file.filename);
    // Into a neighbour first: a failed download leaves no partial file under the name asked for.
    const partial = `${target}.part`;
    try {
      await pipeline(Readable.fromWeb(file.stream as import('node:stream/web').ReadableStream<Uint8Array>), createWriteStream(partial), { signal });
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
  const cause = error instanceof TRPCClientError ? (error.cause ?? error) : error;
  if (cause instanceof TypeError && /fetch failed/.test(cause.message)) return `Cannot reach the service (${String(cause.cause ?? cause.message)})`;
  if (error instanceof ApiError) return `${error.name}: ${error.message}`;
  if (error instanceof TRPCClientError) {
    const body = (error.data as { error?: { name?: string; status?: number } } | undefined)?.error;
    if (body?.status === 401) return `${body.name}: ${error.message}. Run \`npm run cli -- login\` again.`;
    return `${body?.name ?? 'Error'}: ${error.message}`;
  }
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
    if (process.exitCode !== INTERRUPTED) process.exitCode = 1;
  } finally {
    // An open reader on stdin would keep the process alive.
    if (lines) process.stdin.destroy();
  }
}
