/**
 * `npm run build:server` (run by `npm ci` and before every `npm start`; under a second): bundles the
 * server's TypeScript into plain JavaScript under `dist/server/`, which `npm start` runs.
 *
 * Why: a process started from `.ts` files loads Node's type stripper and holds every module's
 * source twice (about 34 MB resident more, docs/performance.md); the bundle is JavaScript, one
 * file and a few chunks. The packages stay in `node_modules` (not bundled: `sqlite3` is native,
 * and Knex and the AWS SDK load parts of themselves by name) but tRPC's server, whose HTTP adapter
 * imports `node:http` the way the bundle does and whose object-spread helper is written with the
 * language's spread (`build-plugins.ts`); the optional back ends stay separate chunks loaded with
 * `import()` only when configured (the S3 store, the metrics registry). The start script's flags
 * are in package.json ([Operators](../docs/operations.md)). Nothing is minified: a stack trace
 * names the bundle's lines, which read as the sources do, each module under a `// server/…`
 * comment. The tests and `npm run admin` run the TypeScript itself, and tRPC as published.
 *
 * Each output file is written aside and renamed into place, the chunks before `main.js`, so a
 * process starting while another `npm start` builds reads the old bundle or the new one, never
 * half of either; chunks carry their content's hash in their names, so a running process's chunks
 * are never replaced. Files that did not change are not written at all.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { build, transform } from 'esbuild';
import { httpByRequire, trpcNativeSpread } from './build-plugins.ts';
import { fromRoot } from './root.ts';

/**
 * A file's text as ASCII. esbuild escapes the non-ASCII characters of the code (its default
 * `charset: 'ascii'`) but keeps those of the comments it carries over, and one character past
 * Latin-1 (a `…` or a `−` in a comment) makes V8 hold the file's whole source two bytes per
 * character instead of one (the bundle: 1.9 MB of heap instead of 1 MB). Each non-ASCII
 * character is written as `\uXXXX`, which reads the same in a comment, a string or a name.
 */
const asciiOnly = (text: string): string => text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/**
 * Checks that writing a file as ASCII changed no code: the same once minified, comments
 * dropped. An escape that would change what runs (a pattern's `source`, a tagged template's raw
 * text) fails the build instead.
 */
async function checkSameCode(text: string, ascii: string, file: string): Promise<void> {
  const code = async (source: string) => (await transform(source, { minify: true, legalComments: 'none', format: 'esm', target: 'node24' })).code;
  if ((await code(text)) !== (await code(ascii))) throw new Error(`${file}: a non-ASCII character cannot be escaped without changing the code`);
}

const outdir = fromRoot('dist', 'server');
const result = await build({
  entryPoints: [fromRoot('server', 'main.ts')],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  packages: 'external',
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  outdir,
  plugins: [httpByRequire, trpcNativeSpread],
  write: false,
  logLevel: 'warning',
});
// The chunks first, `main.js` last: a process starting meanwhile reads the old `main.js` and the
// old chunks it names, or the new one whose chunks are all there.
const outputs = [...result.outputFiles].sort((a, b) => Number(path.basename(a.path) === 'main.js') - Number(path.basename(b.path) === 'main.js'));
for (const file of outputs) {
  const ascii = asciiOnly(file.text);
  const contents = Buffer.from(ascii);
  // Unchanged files are left as they are: a start on a folder the server may only read (built at
  // install by another user) writes nothing. A file written was checked when it was.
  if (existsSync(file.path) && readFileSync(file.path).equals(contents)) continue;
  if (ascii !== file.text) await checkSameCode(file.text, ascii, file.path);
  try {
    mkdirSync(path.dirname(file.path), { recursive: true });
    const aside = `${file.path}.${process.pid}.tmp`;
    writeFileSync(aside, contents);
    renameSync(aside, file.path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EACCES' && code !== 'EPERM' && code !== 'EROFS') throw error;
    console.error(`The server's sources changed since dist/server was built, and ${path.dirname(file.path)} cannot be written (${code}): run \`npm run build:server\` as the user who owns the folder.`);
    process.exit(1);
  }
}

// Chunks no longer named by the bundle, once an hour old: a process started from an earlier
// build has loaded its chunks by then (they are imported at start).
const kept = new Set(outputs.map((file) => file.path));
const chunks = path.join(outdir, 'chunks');
for (const name of existsSync(chunks) ? readdirSync(chunks) : []) {
  const file = path.join(chunks, name);
  // Another build may have removed it meanwhile: then there is nothing to do.
  const modified = kept.has(file) ? undefined : statSync(file, { throwIfNoEntry: false })?.mtimeMs;
  if (modified !== undefined && modified < Date.now() - 3_600_000) rmSync(file, { force: true });
}
