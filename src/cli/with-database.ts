import { openDatabase, type PayhooksDatabase } from '../store/database.js';
import { migrate, type MigrationReport } from '../store/migrate.js';
import type { Env } from '../service/environment.js';

/** The variables that say which database to open. */
export type DatabaseEnv = Pick<Env, 'DATABASE_URL' | 'PAYHOOKS_DATA_DIR' | 'PAYHOOKS_SCHEMA'>;

/**
 * Opens the database the environment names (no secret needed), migrates it, runs `work`, closes it.
 *
 * @example
 * const rows = await withDatabase(ctx.env('events'), (store) => listEvents(store));
 */
export async function withDatabase<T>(
  env: DatabaseEnv,
  work: (store: PayhooksDatabase, migrated: MigrationReport) => Promise<T>,
): Promise<T> {
  const store = await openDatabase({ url: env.DATABASE_URL, dataDir: env.PAYHOOKS_DATA_DIR, schema: env.PAYHOOKS_SCHEMA });
  try {
    return await work(store, await migrate(store));
  } finally {
    await store.close();
  }
}
