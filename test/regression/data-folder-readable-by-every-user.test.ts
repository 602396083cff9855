/**
 * Found by an independent operations review: a new install's data folder was made with the
 * process's umask (`drwxr-xr-x`), and its SQLite file (`-rw-r--r--`) holds password hashes, the
 * session secret and signing keys, so every user of the machine could read them and forge
 * sessions. The service makes its data folder its owner's alone, and warns at start about a
 * folder others may enter.
 */
import { chmod, stat } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startServer, tempDir } from '../helpers/server.ts';

const WARNING = 'the data folder can be entered by every user of this machine';

describe('the data folder', () => {
  it('is made its owner’s alone on a first start', async () => {
    const dataDir = path.join(await tempDir(), 'new-install');
    const server = await startServer({}, dataDir);
    try {
      expect((await stat(dataDir)).mode & 0o777).toBe(0o700);
      expect(server.logs.join('')).not.toContain(WARNING);
    } finally {
      await server.close();
    }
  });

  it('made open to others before, is spoken of at start', async () => {
    const dataDir = await tempDir();
    await chmod(dataDir, 0o755);
    const server = await startServer({}, dataDir);
    try {
      expect(server.logs.join('')).toContain(WARNING);
    } finally {
      await server.close();
    }
  });
});
