import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';

describe('runtime', () => {
  it('runs on the pinned Node 24 LTS, not the machine\'s own Node', () => {
    expect(Number(process.versions.node.split('.')[0])).toBe(24);
  });

  it('declares the engine and pins the runtime in the lockfile', async () => {
    const pkg = JSON.parse(await readFile('package.json', 'utf8'));
    expect(pkg.engines.node).toBe('>=24');
    expect(pkg.devDependencies.node).toMatch(/^24\.\d+\.\d+$/);
    const lock = JSON.parse(await readFile('package-lock.json', 'utf8'));
    expect(lock.packages['node_modules/node'].version).toBe(pkg.devDependencies.node);
  });
});
