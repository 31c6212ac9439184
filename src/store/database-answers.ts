import { sql } from 'kysely';
import { within } from '../internal/within.js';
import type { PayhooksDatabase } from './database.js';
import { quoteIdent } from './quote-ident.js';

/**
 * Whether the database answers `select 1` within `timeoutMs`. When it does not, its connections are discarded, so
 * that the next probe, and the next delivery, use new ones: readiness returns as soon as the database does.
 *
 * @example
 * const ready = await databaseAnswers(store, 2000);
 */
export async function databaseAnswers(store: PayhooksDatabase, timeoutMs: number): Promise<boolean> {
  const answered = sql`select 1`.execute(store.db).then(
    () => true,
    () => false,
  );
  const ready = (await within(answered, timeoutMs)) === true;
  if (!ready) store.discardConnections();
  return ready;
}

/** Runs `select 1`, throwing the driver's error when the database cannot (doctor says why). */
export async function selectOne(store: PayhooksDatabase): Promise<void> {
  await sql`select 1`.execute(store.db.withoutPlugins());
}

/** What a migrations table records, read with selects only: nothing is ever applied. */
export interface RecordedMigrations {
  /** False when the table does not exist: nothing was ever applied there. */
  present: boolean;
  rows: readonly { name: string; checksum: string }[];
}

/**
 * The migrations `schema.table` records (payhooks' `schema_migrations`, the mirror's `mirror_migrations`), read
 * without changing anything.
 *
 * @example
 * const { present, rows } = await recordedMigrations(store, 'payhooks', 'schema_migrations');
 */
export async function recordedMigrations(store: PayhooksDatabase, schema: string, table: string): Promise<RecordedMigrations> {
  const db = store.db.withoutPlugins();
  const name = `${quoteIdent(schema)}.${quoteIdent(table)}`;
  const { rows: found } = await sql<{ present: boolean }>`select to_regclass(${name}) is not null as present`.execute(db);
  if (!found[0]?.present) return { present: false, rows: [] };
  const { rows } = await sql<{ name: string; checksum: string }>`select name, checksum from ${sql.raw(name)} order by name`.execute(db);
  return { present: true, rows };
}
