/**
 * The esbuild plugins `build.ts` bundles the server with. Each changes how a module is loaded or
 * run, never what it does; each fails the build, not the server, when what it relies on moved.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Plugin } from 'esbuild';

/**
 * `node:http` through `require`, for the modules in the bundle. An ES `import` of a built-in
 * module builds its namespace from every export, and reading `http.WebSocket` loads Node's fetch
 * implementation (undici, with TLS and HTTP/2: about 12 MB resident) into a server that never uses
 * it. The names are the ones `node:http` has; one it lacks fails the build, not the server.
 */
const HTTP_EXPORTS = ['METHODS', 'STATUS_CODES', 'Agent', 'ClientRequest', 'IncomingMessage', 'OutgoingMessage', 'Server', 'ServerResponse', 'createServer', 'validateHeaderName', 'validateHeaderValue', 'get', 'request', 'maxHeaderSize', 'globalAgent'];
export const httpByRequire: Plugin = {
  name: 'node-http-by-require',
  setup(on) {
    on.onResolve({ filter: /^(node:)?http$/ }, () => ({ path: 'node:http', namespace: 'http-by-require' }));
    on.onLoad({ filter: /.*/, namespace: 'http-by-require' }, () => ({
      contents: `import { createRequire } from 'node:module';\nconst http = createRequire(import.meta.url)('node:http');\nexport default http;\nexport const { ${HTTP_EXPORTS.join(', ')} } = http;\n`,
      loader: 'js',
    }));
    // tRPC's HTTP adapter imports `node:http` itself: it is bundled (the rest of the packages
    // stay in node_modules) so that its import goes through the same door.
    on.onResolve({ filter: /^@trpc\/server(\/|$)/ }, (args) => ({ path: fileURLToPath(import.meta.resolve(args.path)) }));
  },
};

/**
 * The object-spread helper in tRPC's published JavaScript (`_objectSpread2`, Babel's helper as
 * oxc's runtime copies it), as one of its modules defines it. The compiler writes
 * `{ ...a, b, c }` as `_objectSpread2(_objectSpread2({}, a), {}, { b, c })`: an odd argument's
 * keys are defined one by one, an even argument (always the object literal of the keys written
 * out) is copied with its descriptors, so that a getter in it stays a getter. Every level of a
 * procedure's middleware chain copies the call's options through it four times, and the
 * descriptors' copy is slow in V8 (3–4 µs a pair of calls in a loop): it was 7.5 % of the
 * server's busy time in `GET /tildeusername`, and about 70 % of a tRPC call's own.
 */
export const TRPC_SPREAD_HELPER = /function _objectSpread2\(e\) \{\n\tfor \(var r = 1; r < arguments\.length; r\+\+\) \{\n\t\tvar t = null != arguments\[r\] \? arguments\[r\] : \{\};\n\t\tr % 2 \? ownKeys\(Object\(t\), !0\)\.forEach\(function\(r\) \{\n\t\t\t_defineProperty\(e, r, t\[r\]\);\n\t\t\}\) : Object\.getOwnPropertyDescriptors \? Object\.defineProperties\(e, Object\.getOwnPropertyDescriptors\(t\)\) : ownKeys\(Object\(t\)\)\.forEach\(function\(r\) \{\n\t\t\tObject\.defineProperty\(e, r, Object\.getOwnPropertyDescriptor\(t, r\)\);\n\t\t\}\);\n\t\}\n\treturn e;\n\}/;

/**
 * The same helper written with the language's spread: what tRPC's code writes before it is
 * compiled, in one step (4 to 15 times faster in loops, with the machine), one new object per
 * call for the two and three arguments every call passes (spreading `null` or `undefined` copies
 * nothing, as the helper's `{}` in their place). For the arguments tRPC
 * passes it, it gives the same object, as `trpcNativeSpread` checks of the code it bundles:
 *
 * - An odd argument's own enumerable keys, strings and symbols, are defined as data properties
 *   (`__proto__` included, as a key), in order: exactly the spread's copy.
 * - An even argument is an object literal (checked); without accessors (checked), its properties
 *   are all enumerable, writable and configurable data properties, which the spread copies as
 *   they are.
 * - The result is a new object instead of the first argument changed, which no caller can tell:
 *   every first argument is an object literal or another call's result (checked), held by
 *   nothing else, and none has accessors or sets its prototype (checked).
 * - The helper is only ever called directly (checked), so no other use can see the difference.
 *
 * `test/http/bundle-plugins.test.ts` compares the two helpers' results.
 */
export const NATIVE_SPREAD = `function _objectSpread2(e) {
\tif (arguments.length === 2) return { ...e, ...arguments[1] };
\tif (arguments.length === 3) return { ...e, ...arguments[1], ...arguments[2] };
\tfor (var r = 1; r < arguments.length; r++) e = { ...e, ...arguments[r] };
\treturn e;
}`;

/** A call of the helper whose first argument is neither an object literal nor another call: its result might not be fresh. */
const UNSAFE_CALL = /_objectSpread2\((?!\{|_objectSpread2\()/;
/** Any mention of the helper but a direct call (`.call`, passed as a value, a renamed copy such as `_objectSpread2$1`). */
const OTHER_USE = /\b_objectSpread2(?!\()/;
/** The helper's import and export (`{ n as _objectSpread2 }`, `_objectSpread2 as n`) and its definition, the mentions that are not calls. */
const NAMING = /\b\w+ as _objectSpread2\b|\b_objectSpread2 as \w+\b|function _objectSpread2\(e\)/g;
/** A prototype set in an object literal (its key quoted or not), which the native spread of that literal would not keep. */
const PROTO_IN_LITERAL = /\b__proto__["']?\s*:/;
/** Babel's placeholder between a call's copied object and its literal, followed by anything but that literal (line breaks allowed). */
const EVEN_NOT_LITERAL = /,\s*\{\}\s*,(?!\s*\{)/;
/**
 * A call that copies a named object into `{}` and passes more after it (`_objectSpread2({}, a, b)`),
 * whose third argument would be copied with its descriptors: Babel never writes one (it nests a
 * call instead). Only the simple form (a name or a property path) is recognised.
 */
const COPIED_THEN_MORE = /_objectSpread2\(\{\},\s*[\w$.]+\s*,/;
/**
 * An accessor in an object literal (`get name(`, `set name(`, quoted and computed names too),
 * which the spread would read instead of copying. It looks at the whole module, class bodies
 * and comments included: a false alarm stops the build for a look, which is the safe side.
 */
const ACCESSOR = /[{,]\s*(?:get|set)\s+(?:[\w$]+|"[^"]*"|'[^']*'|\[[^\]]*\])\s*\(/;

/**
 * tRPC's bundled modules (its adapters included) with `NATIVE_SPREAD` in place of
 * `TRPC_SPREAD_HELPER`. The build fails when the helper is not found as it was (a tRPC upgrade
 * that changed it), when it is used other than by a direct call, when a call passes something
 * other than a fresh object first or a literal after the compiler's `{}`, or when a tRPC module
 * writes an accessor or a prototype into an object literal: then the replacement needs looking at
 * again. The checks read the text, not a syntax tree: they are meant to stop the build on any
 * change to the shapes they were written against (the compiler's output, one call per line
 * break or not), not to parse JavaScript. The tests run tRPC as published.
 */
export const trpcNativeSpread: Plugin = {
  name: 'trpc-native-spread',
  setup(on) {
    let replaced = 0;
    on.onStart(() => {
      replaced = 0;
    });
    on.onLoad({ filter: /[\\/]@trpc[\\/]server[\\/]dist[\\/].+\.mjs$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8');
      if (OTHER_USE.test(text.replace(NAMING, ''))) throw new Error(`${args.path}: _objectSpread2 is used other than by a direct call`);
      if (UNSAFE_CALL.test(text.replace('function _objectSpread2(e)', ''))) throw new Error(`${args.path}: a call of _objectSpread2 whose first argument is not an object literal`);
      if (EVEN_NOT_LITERAL.test(text) || COPIED_THEN_MORE.test(text)) throw new Error(`${args.path}: a call of _objectSpread2 whose even argument is not an object literal`);
      if (ACCESSOR.test(text)) throw new Error(`${args.path}: an object literal with an accessor, which a native spread would read`);
      if (PROTO_IN_LITERAL.test(text)) throw new Error(`${args.path}: an object literal that sets its prototype, which a native spread would not keep`);
      if (!text.includes('function _objectSpread2(')) return { contents: text, loader: 'js' };
      if (!TRPC_SPREAD_HELPER.test(text)) throw new Error(`${args.path}: tRPC's _objectSpread2 is not the helper trpcNativeSpread replaces`);
      replaced += 1;
      return { contents: text.replace(TRPC_SPREAD_HELPER, NATIVE_SPREAD), loader: 'js' };
    });
    on.onEnd((result) => {
      if (result.errors.length === 0 && replaced === 0) throw new Error("tRPC's _objectSpread2 was not found in the bundle: trpcNativeSpread needs looking at again");
    });
  },
};
