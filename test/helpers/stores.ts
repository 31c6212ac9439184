import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrate.js';
import { pgUrl, uniqueSchema } from './pg.js';

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
    async open({ migrated = true } = {}) {
      const store = await openDatabase({ dataDir: 'memory://', schema: uniqueSchema('store') });
      if (migrated) await migrate(store);
      return store;
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
