import type { Knex } from 'knex';
import { rawRows } from './knex.ts';

/** What a parameter stands for while its query is compiled: a text no caller sends. */
const MARK = '\u0000compiled-once:';

/** Where each of a compiled statement's values comes from: a parameter, or a value the builder put there. */
type Slot = { param: string } | { value: unknown };

interface Compiled {
  sql: string;
  slots: Slot[];
}

/**
 * A builder query compiled once per database dialect, for the statements the service sends on
 * every request. Knex compiles a builder query anew on every call, walking its clauses and
 * quoting its identifiers: 11–18 µs in a loop, against 2–4 µs for the same SQL given as text
 * (docs/performance.md, row 3a). Here the query is built once, with a mark standing for each
 * parameter, and every call sends that SQL through `knex.raw` with its own values in the marks'
 * places: the same text, so the driver's cache of prepared statements (`db/sqlite.ts`) finds it too.
 *
 * `build` must put each parameter where Knex binds a value (a `where`, an `update`'s value), as
 * it is: a parameter folded into other text (a `like` pattern, a concatenation) is refused when
 * the query compiles, and so is SQL whose placeholders Knex's raw would read differently.
 * Answers come as the driver's rows, whatever the builder's method (`first`, `update`) would
 * have made of them: ask with `.returning(…)` for what an update changed.
 */
export class CompiledQuery<P extends string> {
  readonly #params: readonly P[];
  readonly #build: (db: Knex, param: Record<P, string>) => Knex.QueryBuilder;
  readonly #byDialect = new Map<string, Compiled>();

  constructor(params: readonly P[], build: (db: Knex, param: Record<P, string>) => Knex.QueryBuilder) {
    this.#params = params;
    this.#build = build;
  }

  /**
   * The statement's rows, on `db` (the database or a transaction). Values are plain ones only:
   * Knex's raw would write a builder or a raw given here into the SQL, and it sends null as a
   * value, so `= null` matches nothing where the builder would have written `is null`.
   */
  async rows<T>(db: Knex | Knex.Transaction, values: Record<P, string | number | boolean>): Promise<T[]> {
    const compiled = this.#compiled(db);
    const bindings = compiled.slots.map((slot) => ('param' in slot ? values[slot.param as P] : slot.value));
    return rawRows<T>(await db.raw(compiled.sql, bindings as Knex.RawBinding[]));
  }

  #compiled(db: Knex | Knex.Transaction): Compiled {
    const dialect = String((db.client as { dialect?: unknown }).dialect);
    let compiled = this.#byDialect.get(dialect);
    if (!compiled) {
      compiled = this.#compile(db);
      this.#byDialect.set(dialect, compiled);
    }
    return compiled;
  }

  #compile(db: Knex): Compiled {
    const marks = Object.fromEntries(this.#params.map((name) => [name, `${MARK}${name}`])) as Record<P, string>;
    const { sql, bindings } = this.#build(db, marks).toSQL();
    const used = new Set<string>();
    const slots = bindings.map((value): Slot => {
      if (typeof value !== 'string' || !value.includes(MARK)) return { value };
      const name = value.slice(MARK.length);
      if (!value.startsWith(MARK) || !this.#params.includes(name as P)) throw new Error(`compiled query: a parameter was folded into a value (${JSON.stringify(name)})`);
      used.add(name);
      return { param: name };
    });
    const unused = this.#params.filter((name) => !used.has(name));
    if (unused.length > 0) throw new Error(`compiled query: no place for ${unused.join(', ')}`);
    // Knex's raw reads `?` as a value's place and `??` as a name's; the compiled text must have exactly one `?` per value.
    if (sql.includes('??') || sql.includes('\\?') || (sql.match(/\?/g) ?? []).length !== slots.length) {
      throw new Error('compiled query: its placeholders do not match its values');
    }
    return { sql, slots };
  }
}
