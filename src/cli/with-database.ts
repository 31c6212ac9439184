import { existsSync } from 'node:fs';
import { readPostgresMarker } from '../service/postgres-marker.js';
import type { Env } from '../service/environment.js';
import { DATABASE_DEFAULTS, openDatabase, type PayhooksDatabase } from '../store/database.js';
import { migrate, type MigrationReport } from '../store/migrate.js';
import { explainedDatabaseError } from './database-error.js';
import { stdio } from './output.js';

/** The variables that say which database to open. */
export type DatabaseEnv = Pick<Env, 'DATABASE_URL' | 'PAYHOOKS_DATA_DIR' | 'PAYHOOKS_SCHEMA'> &
  Partial<Pick<Env, 'PAYHOOKS_DATABASE_POOLER'>>;

/** Options of {@link withDatabase}. */
export interface WithDatabaseOptions {
  /** The command exists to create the database (`migrate`): no note that the embedded one was just created. */
  createsDatabase?: boolean | undefined;
}

/**
 * Opens the database the environment names (no secret needed), migrates it, runs `work`, closes it. A server that
 * cannot be reached, a database that does not exist or a refused login fails with a message naming DATABASE_URL
 * (without its password) and `payhooks doctor`; opening the embedded database says on stderr when it was just
 * created, and when a serve in this folder uses PostgreSQL instead.
 *
 * @example
 * const rows = await withDatabase(ctx.env('events'), (store) => listEvents(store));
 */
export async function withDatabase<T>(
  env: DatabaseEnv,
  work: (store: PayhooksDatabase, migrated: MigrationReport) => Promise<T>,
  options: WithDatabaseOptions = {},
): Promise<T> {
  const dataDir = env.PAYHOOKS_DATA_DIR ?? DATABASE_DEFAULTS.dataDir;
  const embedded = !env.DATABASE_URL && !dataDir.startsWith('memory://');
  const existed = embedded && existsSync(dataDir);
  const store = await openDatabase({ url: env.DATABASE_URL, dataDir, schema: env.PAYHOOKS_SCHEMA, pooler: env.PAYHOOKS_DATABASE_POOLER });
  try {
    let migrated: MigrationReport;
    try {
      migrated = await migrate(store);
    } catch (err) {
      throw env.DATABASE_URL ? explainedDatabaseError(env.DATABASE_URL, err) : err;
    }
    if (embedded) await embeddedNotes(dataDir, existed || options.createsDatabase === true);
    return await work(store, migrated);
  } finally {
    await store.close();
  }
}

/** Says that the embedded database was just made (so it is empty), and which PostgreSQL a serve here uses. */
async function embeddedNotes(dataDir: string, existed: boolean): Promise<void> {
  const marker = readPostgresMarker(dataDir);
  const serveUses = marker
    ? `a payhooks serve started in this folder (process ${marker.pid}, ${marker.startedAt}) uses PostgreSQL at ${marker.database}: set DATABASE_URL to read it`
    : 'if your serve uses PostgreSQL, set DATABASE_URL to read its database';
  if (!existed) {
    await stdio().err.line(`payhooks: DATABASE_URL is not set, so a new, empty embedded database was created at ${dataDir}; ${serveUses}.`);
  } else if (marker) {
    await stdio().err.line(`payhooks: DATABASE_URL is not set, so this reads the embedded database at ${dataDir}; ${serveUses}.`);
  }
}
