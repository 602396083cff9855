/**
 * The service's own folder (where package.json is), found by walking up from this module: the
 * same answer whether the server runs from its TypeScript sources (`server/…`) or from the bundle
 * `npm start` builds (`dist/server/…`). Files the server reads beside its code (the pages'
 * templates and assets) are named from here, never from the importing module's own location,
 * which the bundle changes.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json')) && existsSync(path.join(dir, 'server'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json with a server/ folder above ${from}`);
  }
}

export const ROOT = findRoot(path.dirname(fileURLToPath(import.meta.url)));

/** A path inside the service's folder, from its parts (`fromRoot('server', 'web', 'assets')`). */
export const fromRoot = (...parts: string[]): string => path.join(ROOT, ...parts);
