/**
 * The bundle's plugins (`server/build-plugins.ts`). tRPC's object-spread helper written with the
 * language's spread gives what the published one gives, for every shape of call tRPC's code makes
 * (Babel's: a copied object, then `{}` and the literal of the keys written out) and the values
 * that reach it; the build refuses a tRPC whose helper or calls are not what the replacement was
 * checked against.
 */
import { cp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpByRequire, NATIVE_SPREAD, TRPC_SPREAD_HELPER, trpcNativeSpread } from '../../server/build-plugins.ts';
import { tempDir } from '../helpers/server.ts';

type Spread = (...args: unknown[]) => object;

const TRPC_DIST = path.dirname(fileURLToPath(import.meta.resolve('@trpc/server')));

/** tRPC's own helper, from the module of its package that defines and exports it. */
async function publishedSpread(): Promise<Spread> {
  for (const name of await readdir(TRPC_DIST)) {
    if (!name.endsWith('.mjs')) continue;
    const text = await readFile(path.join(TRPC_DIST, name), 'utf8');
    const alias = /_objectSpread2 as (\w+)/.exec(text)?.[1];
    if (!text.includes('function _objectSpread2(') || !alias) continue;
    const module = (await import(pathToFileURL(path.join(TRPC_DIST, name)).href)) as Record<string, Spread>;
    return module[alias]!;
  }
  throw new Error("tRPC's _objectSpread2 was not found");
}

/** The replacement, from its own text as the bundle holds it. */
const nativeSpread = new Function(`${NATIVE_SPREAD}\nreturn _objectSpread2;`)() as Spread;

/** What an object is: its prototype and each own property's descriptor, in order, symbols included. */
function shapeOf(value: object): unknown {
  return { prototype: Object.getPrototypeOf(value), properties: Object.getOwnPropertyDescriptors(value), order: Reflect.ownKeys(value) };
}

const tag = Symbol('tag');
const next = (): void => undefined;
const hidden = Object.defineProperty({ shown: 1 }, 'hidden', { value: 2, enumerable: false });
const inherited = Object.assign(Object.create({ fromPrototype: 1 }) as object, { own: 2 });
const withGetter = {
  get computed() {
    return 'read';
  },
};

/** Calls as tRPC's code makes them, with the values that reach them: objects of any kind copied, literals after `{}`. */
const CALLS: Array<[string, (spread: Spread) => object]> = [
  ['options copied, then more keys', (f) => f(f({}, { ctx: { a: 1 }, path: 'x', input: undefined, signal: undefined }), {}, { meta: undefined, input: 2, next })],
  ['a later key overrides an earlier one, in the earlier place', (f) => f(f({}, { a: 1, b: 2 }), {}, { a: 3, c: 4 })],
  ['symbol keys copied, non-enumerable and inherited ones not', (f) => f(f(f({}, { [tag]: 'yes', plain: 1 }), hidden), inherited)],
  ['a getter in a copied object is read, its value copied', (f) => f(f({}, withGetter), {}, { more: true })],
  ['an own __proto__ key (as JSON.parse makes it) stays a key', (f) => f(f({}, JSON.parse('{"__proto__": {"polluted": true}, "x": 1}') as object), JSON.parse('{"__proto__": 5}') as object)],
  ['null, undefined and false are copied as nothing', (f) => f(f(f({}, null), undefined), false)],
  ['a string copies its characters, a number nothing', (f) => f(f({}, 'ab'), 7)],
  ['an array copies its indices', (f) => f(f({}, ['x', 'y']), {}, { length: 9 })],
  ['three arguments, the one between null', (f) => f(f({}, { a: 1 }), null, { b: 2 })],
  ['six arguments, later keys winning', (f) => f({ z: 0 }, { a: 1 }, {}, { b: 2, a: 3 }, {}, 'cd')],
  ['a first argument with keys of its own', (f) => f({ req: 1, res: 2, path: '' }, { a: 1, req: 3 })],
  ['a literal with a computed key and a __proto__ setting', (f) => f(f({}, { a: 1 }), {}, { ['com' + 'puted']: 1, __proto__: { fromLiteral: true } })],
];

describe("tRPC's object-spread helper written with the language's spread", () => {
  let published: Spread;
  beforeAll(async () => {
    published = await publishedSpread();
  });

  it.each(CALLS)('%s: the same object as the published helper gives', (_name, call) => {
    const ours = call(nativeSpread);
    expect(shapeOf(ours)).toEqual(shapeOf(call(published)));
    // A plain object, never one whose prototype a key changed.
    expect(Object.getPrototypeOf(ours)).toBe(Object.prototype);
  });

  it('differs only where tRPC never calls it: an even argument that is not a literal without accessors', () => {
    const call = (f: Spread) => f(f({}, { a: 1 }), {}, withGetter);
    expect(Object.getOwnPropertyDescriptor(call(published), 'computed')?.get).toBeTypeOf('function');
    expect(Object.getOwnPropertyDescriptor(call(nativeSpread), 'computed')?.value).toBe('read');
  });
});

describe('the build of tRPC with the replacement', () => {
  let dir = '';
  let copies = 0;
  beforeAll(async () => {
    dir = await tempDir();
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** Bundles `entry` (a module's text) with the server's plugins; the output's text. */
  async function bundle(entry: string): Promise<string> {
    const file = path.join(dir, `entry-${(copies += 1)}.mjs`);
    await writeFile(file, entry);
    const result = await build({ entryPoints: [file], bundle: true, platform: 'node', format: 'esm', write: false, packages: 'external', logLevel: 'silent', plugins: [httpByRequire, trpcNativeSpread] });
    return result.outputFiles[0]!.text;
  }

  it("replaces the helper in tRPC's server, whose adapters' calls are checked too", async () => {
    const text = await bundle("export { initTRPC } from '@trpc/server';\nexport { createExpressMiddleware } from '@trpc/server/adapters/express';\n");
    expect(text).toContain('e = { ...e, ...arguments[r] }');
    expect(text).toContain('function createExpressMiddleware(');
    expect(text).not.toMatch(/getOwnPropertyDescriptors/);
    expect(text.match(/function _objectSpread2\(/g)).toHaveLength(1);
  });

  it('fails when nothing it bundles holds the helper (a tRPC that no longer carries it needs looking at again)', async () => {
    await expect(bundle('export const nothing = 1;\n')).rejects.toThrow(/was not found in the bundle/);
  });

  /** A copy of tRPC's published modules (its adapters too) under the temporary folder, with `change` made to `file` (a path under `dist`); the changed file's path. */
  async function changedTrpc(file: string, change: (text: string) => string): Promise<string> {
    const copy = path.join(dir, `copy-${(copies += 1)}`, 'node_modules', '@trpc', 'server', 'dist');
    await cp(TRPC_DIST, copy, { recursive: true, filter: (source) => !/\.(map|cjs|d\.[cm]ts)$/.test(source) });
    const changed = path.join(copy, file);
    await writeFile(changed, change(await readFile(changed, 'utf8')));
    return changed;
  }

  /** The module of tRPC's package that defines the helper, by its name under `dist`. */
  async function definingModule(): Promise<string> {
    for (const name of await readdir(TRPC_DIST)) {
      if (name.endsWith('.mjs') && (await readFile(path.join(TRPC_DIST, name), 'utf8')).includes('function _objectSpread2(')) return name;
    }
    throw new Error("tRPC's _objectSpread2 was not found");
  }

  const added = (code: string) => (text: string) => `${text}\n${code}\n`;
  it.each([
    ['a helper not written as it was', 'defining', (text: string) => text.replace('r % 2 ? ownKeys', 'r % 3 ? ownKeys'), /not the helper/],
    ['a call whose first argument is not a literal', 'defining', added('export const odd = (a, b) => _objectSpread2(a, b);'), /first argument/],
    ['such a call in an adapter', 'adapters/express.mjs', added('export const odd = (a, b) => _objectSpread2(a, b);'), /first argument/],
    ['a call whose even argument is not a literal', 'defining', added('export const odd = (a, b) => _objectSpread2({}, {}, b);'), /even argument/],
    ['such an argument after a line break', 'defining', added('export const odd = (a, b) => _objectSpread2(_objectSpread2({}, a), {},\n  b);'), /even argument/],
    ['a third argument after an object copied into {}', 'adapters/express.mjs', added('export const odd = (a, b) => _objectSpread2({}, a, b);'), /even argument/],
    ['the helper called through .call', 'adapters/express.mjs', added('export const odd = (a) => _objectSpread2.call(null, {}, a);'), /other than by a direct call/],
    ['the helper passed as a value', 'defining', added('export const odd = (list) => list.reduce(_objectSpread2, {});'), /other than by a direct call/],
    ['an accessor in an object literal', 'defining', added('export const odd = { get size() { return 1; } };'), /accessor/],
    ['an accessor with a quoted name', 'adapters/express.mjs', added('export const odd = { get "size"() { return 1; } };'), /accessor/],
    ['a literal that sets its prototype', 'defining', added('export const odd = (a) => _objectSpread2({ __proto__: null }, a);'), /prototype/],
    ['a literal that sets its prototype with a quoted key', 'defining', added('export const odd = (a) => _objectSpread2({ "__proto__": null }, a);'), /prototype/],
  ])('fails on %s', async (name, file, change, message) => {
    const defining = await definingModule();
    const module = await changedTrpc(file === 'defining' ? defining : file, change);
    if (file === 'defining') expect(TRPC_SPREAD_HELPER.test(await readFile(module, 'utf8'))).toBe(name !== 'a helper not written as it was');
    await expect(bundle(`export * from ${JSON.stringify(module)};\n`)).rejects.toThrow(message);
  });
});
