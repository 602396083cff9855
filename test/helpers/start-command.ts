/**
 * What `npm start` runs, read from package.json's `start` script, so that the bench and the
 * bundle's test start the server exactly as an operator's `npm start` does.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * `npm start`'s command (package.json's `start` script: `[exec] [env] [NAME=value …] node [flags]
 * <script>`), as the environment it sets, Node's flags and the script.
 */
export function startCommand(): { env: Record<string, string>; flags: string[]; script: string } {
  const scripts = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const words = (scripts.start ?? '').trim().split(/\s+/);
  const env: Record<string, string> = {};
  // `exec env`: the shell npm runs the script with becomes the server itself, so the signals npm
  // forwards (SIGTERM, SIGINT) reach it; a shell left in between would die and orphan it.
  if (words[0] === 'exec') words.shift();
  if (words[0] === 'env') words.shift();
  while (words[0] && /^[A-Z_]+=/.test(words[0])) {
    const [name = '', ...value] = words.shift()!.split('=');
    env[name] = value.join('=');
  }
  if (words[0] !== 'node' || words.length < 2) throw new Error(`the start script is not "[exec] [env] [NAME=value …] node [flags] <script>": ${scripts.start}`);
  return { env, flags: words.slice(1, -1), script: words.at(-1)! };
}
