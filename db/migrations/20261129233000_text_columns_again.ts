import type { Knex } from 'knex';
import { isPostgres } from '../postgres.ts';

/**
 * `20261123090000_text_without_length_limits` again: tables and columns made since with Knex's
 * `string()` brought `varchar(n)` back on PostgreSQL (`account_deletions.profile_id`, the refresh
 * tokens', session clients' and client uses' profile ids at 300, and others), where a profile id
 * may be longer: a person whose full name is 300 characters could not ask for their account's
 * deletion there. Every `varchar` column becomes `text` once more; `test/db/migrations.test.ts`
 * checks that none is left. PostgreSQL changes no column a trigger names, so the triggers of the
 * tables concerned are set aside and made again from their own definitions, in this transaction.
 */
export async function up(db: Knex): Promise<void> {
  if (!isPostgres(db)) return;
  const { rows: columns } = (await db.raw(
    `select table_name, column_name from information_schema.columns
      where table_schema = current_schema() and data_type = 'character varying' and table_name not like 'knex\\_%'
      order by table_name, column_name`,
  )) as { rows: Array<{ table_name: string; column_name: string }> };
  const tables = [...new Set(columns.map((c) => c.table_name))];
  if (tables.length === 0) return;
  const { rows: triggers } = (await db.raw(
    `select t.tgname as name, c.relname as table_name, pg_get_triggerdef(t.oid) as definition
      from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace
      where not t.tgisinternal and n.nspname = current_schema() and c.relname = any(?)`,
    [tables],
  )) as { rows: Array<{ name: string; table_name: string; definition: string }> };
  for (const trigger of triggers) await db.raw('drop trigger ?? on ??', [trigger.name, trigger.table_name]);
  for (const { table_name, column_name } of columns) await db.raw('alter table ?? alter column ?? type text', [table_name, column_name]);
  // A definition is SQL as PostgreSQL writes it; a `?` in it is not one of Knex's bindings.
  for (const trigger of triggers) await db.raw(trigger.definition.replaceAll('?', '\\?'));
}

/** Lengths are not put back: a value longer than they were would no longer fit. */
export async function down(): Promise<void> {}
