/**
 * The built client bundle, used as another project would use it: from a temporary folder
 * whose only dependencies are the bundle (`npm run build`) and its runtime dependencies
 * (zod, @trpc/client and its peer @trpc/server). The program there is type-checked against
 * the bundle's declarations, then run against a real server (see `fixtures/consumer.ts`).
 */
import { execFile } from 'node:child_process';
import { cp, mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUBMISSION, venueWithAuthor } from '../attachments/helpers.ts';
import { childEnv, startServer, tempDir, type TestServer } from '../helpers/server.ts';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');
const bin = (name: string) => path.join(root, 'node_modules/.bin', name);

let server: TestServer;
let project: string;

beforeAll(async () => {
  await run('npm', ['run', 'build'], { cwd: root });
  server = await startServer();
  await venueWithAuthor(server);

  project = await tempDir('client-bundle-');
  const installed = path.join(project, 'node_modules');
  const bundle = path.join(installed, 'peer-review-accounts');
  await mkdir(path.join(bundle, 'dist'), { recursive: true });
  await cp(path.join(root, 'dist/client'), path.join(bundle, 'dist/client'), { recursive: true });
  const manifest = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as Record<string, unknown>;
  await writeFile(path.join(bundle, 'package.json'), JSON.stringify({ name: manifest.name, version: manifest.version, type: 'module', exports: manifest.exports }));
  // The runtime dependencies, and Node's types for type-checking the program.
  for (const name of ['zod', '@trpc/client', '@trpc/server', '@types/node', 'undici-types']) {
    await mkdir(path.dirname(path.join(installed, name)), { recursive: true });
    await symlink(path.join(root, 'node_modules', name), path.join(installed, name));
  }
  await writeFile(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  await writeFile(
    path.join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { target: 'es2024', module: 'nodenext', strict: true, noEmit: true, skipLibCheck: true, types: ['node'], allowImportingTsExtensions: true },
      include: ['*.ts'],
    }),
  );
  await cp(path.join(root, 'test/client/fixtures/consumer.ts'), path.join(project, 'consumer.ts'));
  await cp(path.join(root, 'test/helpers/proxy.ts'), path.join(project, 'proxy.ts'));
}, 120_000);
afterAll(async () => {
  await server?.close();
  if (project) await rm(project, { recursive: true, force: true });
});

describe('the built client bundle', () => {
  it('imports only zod and @trpc/client at run time', async () => {
    // esbuild's own account of the bundle: every import it left outside, static or dynamic.
    const meta = JSON.parse(await readFile(path.join(root, 'dist/client/meta.json'), 'utf8')) as {
      outputs: Record<string, { imports: { path: string; external?: boolean }[] }>;
    };
    const imports = meta.outputs['dist/client/index.js']?.imports ?? [];
    expect(imports.every((i) => i.external)).toBe(true);
    expect([...new Set(imports.map((i) => i.path))].sort()).toEqual(['@trpc/client', 'zod']);
  });

  it('type-checks a program against its declarations, which infer every procedure', async () => {
    // The program holds @ts-expect-error lines: they fail the check if the types were `any`.
    const { stdout } = await run(bin('tsc'), ['-p', project]).catch((error: { stdout: string }) => ({ stdout: error.stdout }));
    expect(stdout).toBe('');
  });

  it('registers, activates, logs in, uploads 20 MB with progress, submits, reads back, and resumes a cut upload', async () => {
    const { stdout } = await run(bin('node'), ['consumer.ts'], {
      cwd: project,
      env: await childEnv({ SERVICE_URL: server.url, DATA_DIR: server.dataDir, SUBMISSION }),
      timeout: 120_000,
    });
    const summary = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as { uploaded: number; resumedFrom: number; total: number };
    expect(summary.uploaded).toBe(20 * 1024 * 1024);
    expect(summary.resumedFrom).toBeGreaterThan(0);
    expect(summary.resumedFrom).toBeLessThan(summary.total);
  }, 150_000);
});
