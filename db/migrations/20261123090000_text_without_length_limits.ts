import type { Knex } from 'knex';

/**
 * Text columns made with Knex's `string()` are `varchar(255)` on PostgreSQL (SQLite ignores the
 * length): a 300-character name was a 500 there. Limits belong in the request schemas, where a
 * value too long is a 400 that says which field; the columns hold whatever the schemas let
 * through. So every `varchar` column becomes `text` (PostgreSQL stores both alike; nothing is
 * rewritten). SQLite has nothing to change.
 */
export async function up(db: Knex): Promise<void> {
  if (db.client.config.client !== 'pg') return;
  const { rows } = (await db.raw(
    `select table_name, column_name from information_schema.columns
      where table_schema = current_schema() and data_type = 'character varying' and table_name not like 'knex\\_%'
      order by table_name, column_name`,
  )) as { rows: Array<{ table_name: string; column_name: string }> };
  for (const { table_name, column_name } of rows) {
    await db.raw('alter table ?? alter column ?? type text', [table_name, column_name]);
  }
}

/** Lengths are not put back: a value longer than 255 characters would no longer fit. */
export async function down(): Promise<void> {}
