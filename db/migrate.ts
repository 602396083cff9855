/** `npm run migrate`: brings the database of `$DATA_DIR` to the latest migration. */
import { loadConfig } from '../server/config.ts';
import { migrateToLatest, openDatabase } from './knex.ts';

const config = loadConfig(process.env);
const db = openDatabase(config);
try {
  await migrateToLatest(db);
  const [, pending] = await db.migrate.list();
  console.log(`Database ${config.databaseUrl ? "(PostgreSQL)" : `at ${config.dataDir}`} is up to date (${pending.length} pending).`);
} finally {
  await db.destroy();
}
