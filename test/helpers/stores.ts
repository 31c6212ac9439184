import { sql } from 'kysely';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrate.js';
import { pgUrl, uniqueSchema } from './pg.js';
import { TEMPLATE_SCHEMA } from './pglite-template.js';

/** A storage backend a suite runs against: the real server (skipped when absent) and embedded PGlite. */
export interface Backend {
  name: 'postgres' | 'pglite';
  available: boolean;
  /** Opens a fresh, migrated schema of its own. */
  open(options?: { migrated?: boolean }): Promise<PayhooksDatabase>;
}

export const backends: Backend[] = [
  {
    name: 'postgres',
    available: pgUrl !== null,
    async open({ migrated = true } = {}) {
      const store = await openDatabase({ url: pgUrl ?? undefined, schema: uniqueSchema('store') });
      if (migrated) await migrate(store);
      return store;
    },
  },
  {
    name: 'pglite',
    available: true,
    // Each `memory://` database is a database of its own, so one schema name is enough; in TEMPLATE_SCHEMA it
    // starts as a copy of the migrated template (test/helpers/pglite-template.ts).
    async open({ migrated = true } = {}) {
      return openDatabase({ dataDir: 'memory://', schema: migrated ? TEMPLATE_SCHEMA : 'store_fresh' });
    },
  },
];

/** Drops the schema a test made (real server only; PGlite in memory vanishes on close). */
export async function dispose(store: PayhooksDatabase): Promise<void> {
  if (store.kind === 'postgres') {
    const { sql } = await import('kysely');
    await sql.raw(`drop schema if exists "${store.schema}" cascade`).execute(store.db);
  }
  await store.close();
}

/**
 * Empties every table of the store's schema but the migrations' record, sequences restarted: the state of a store just
 * opened, less the history partitions already made. For a file whose tests share one store, opened once: opening and
 * migrating one per test costs more than most short tests (about a second on PGlite, a third of one on the server).
 */
export async function emptyStore(store: PayhooksDatabase): Promise<void> {
  const { rows } = await sql<{ name: string }>`select tablename as name from pg_tables
    where schemaname = ${store.schema} and tablename <> 'schema_migrations'`.execute(store.db);
  if (rows.length === 0) return;
  await sql`truncate ${sql.join(rows.map((row) => sql.id(store.schema, row.name)))} restart identity`.execute(store.db);
  // The implicit account migration 018 adds goes with the rest: put back, or every write of the default account's
  // events would be refused by the accounts' foreign keys.
  if (rows.some((row) => row.name === 'accounts')) {
    await sql`insert into ${sql.id(store.schema, 'accounts')} (id) values ('default')`.execute(store.db);
  }
}
