/**
 * A kill between creating `$DATA_DIR/session-secret` and writing it left an empty file, and the
 * next start signed every session with the empty string as its key. The secret is now written
 * whole to a file of its own and linked into place; an empty or cut one is replaced.
 */
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSessionSecret } from '../../server/accounts/session-tokens.ts';
import { tempDir } from '../helpers/server.ts';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('the generated session secret', () => {
  it('an empty file left by a crash is replaced by a whole secret, kept with mode 0600', async () => {
    const dir = await tempDir();
    dirs.push(dir);
    await writeFile(path.join(dir, 'session-secret'), '');
    const secret = await loadSessionSecret(undefined, dir);
    expect(secret.length).toBeGreaterThanOrEqual(32);
    expect((await readFile(path.join(dir, 'session-secret'), 'utf8')).trim()).toBe(secret);
    expect((await stat(path.join(dir, 'session-secret'))).mode & 0o777).toBe(0o600);
  });

  it('processes starting together all get the one secret, and leave no other file', async () => {
    const dir = await tempDir();
    dirs.push(dir);
    const secrets = await Promise.all(Array.from({ length: 8 }, () => loadSessionSecret(undefined, dir)));
    expect(new Set(secrets).size).toBe(1);
    const { readdir } = await import('node:fs/promises');
    expect(await readdir(dir)).toEqual(['session-secret']);
  });
});
