import type { Logger } from 'pino';
import { type DatabaseOptions, openDatabase, type PayhooksDatabase } from './database.js';
import { ensureHistoryPartitions, type PartitionSpan } from './history-partitions.js';
import { type MigrationFile, migrate, migrateApp, UnknownMigrationsError, unknownMigrations } from './migrate.js';

/** What {@link inboxOpener} opens and how it prepares it. */
export interface InboxOpenerOptions {
  /** An open database (used as it is, never closed here), or how to open one. */
  database: PayhooksDatabase | DatabaseOptions | undefined;
  /** Apply payhooks' migrations (and the app's); false only refuses a schema migrated by a newer payhooks. */
  migrate: boolean;
  /** The app's own migrations, applied in `appSchema` after payhooks' own. */
  appMigrations: readonly MigrationFile[] | undefined;
  appSchema: string;
  /** The history's partitions, made before the first delivery: a receiver without a worker in its process stores into them. */
  history: { span: PartitionSpan; ahead: number };
  logger: Logger;
}

function isOpenDatabase(value: InboxOpenerOptions['database']): value is PayhooksDatabase {
  return value !== undefined && 'db' in value && 'kind' in value;
}

/** The inbox's database as a payhooks instance holds it: opened on first use, closed if it opened it. */
export interface InboxOpener {
  /** Opens, migrates and prepares the database on first call; every later call gets the same open database. */
  ready(): Promise<PayhooksDatabase>;
  /** Closes the database if this opener opened it (a given one is the caller's); the next `ready()` opens anew. */
  close(): Promise<void>;
}

/**
 * Opens the inbox's database on first use, migrates it and makes the history's first partitions. A failed open is
 * tried again on the next call rather than remembered forever (a database that was down at the first delivery is used
 * once it is up).
 *
 * @example
 * const inbox = inboxOpener({ database: { url }, migrate: true, appMigrations: undefined, appSchema: 'public', history, logger });
 * const store = await inbox.ready();
 */
export function inboxOpener(options: InboxOpenerOptions): InboxOpener {
  const { logger } = options;
  const given = isOpenDatabase(options.database) ? options.database : undefined;
  let opening: Promise<PayhooksDatabase> | undefined;
  return {
    ready() {
      opening ??= (async () => {
        const store =
          given ??
          (await openDatabase({
            ...(options.database as DatabaseOptions | undefined),
            onIdleError: (err) => logger.warn({ err }, 'idle database connection failed'),
            onPoolerSeen: (what) => logger.warn(what),
          }));
        try {
          await prepareSchema(store, options);
        } catch (err) {
          if (!given) await store.close().catch(() => undefined);
          throw err;
        }
        return store;
      })();
      opening.catch(() => (opening = undefined));
      return opening;
    },
    async close() {
      if (!given && opening) await (await opening.catch(() => undefined))?.close();
      opening = undefined;
    },
  };
}

/** Applies payhooks' migrations, then the app's; or, with `migrate: false`, only refuses a newer schema. */
async function prepareSchema(store: PayhooksDatabase, options: InboxOpenerOptions): Promise<void> {
  const { logger, appSchema, appMigrations, history } = options;
  if (!options.migrate) {
    const unknown = await unknownMigrations(store);
    if (unknown.length) throw new UnknownMigrationsError(store.schema, unknown);
    return;
  }
  const report = await migrate(store);
  if (report.applied.length) logger.info({ applied: report.applied }, 'applied migrations');
  await ensureHistoryPartitions(store, { span: history.span, ahead: history.ahead });
  if (!appMigrations) return;
  const app = await migrateApp(store, appMigrations, { appSchema });
  if (app.applied.length) logger.info({ applied: app.applied, appSchema }, "applied the app's migrations");
  if (app.unknown.length) {
    logger.warn(
      { unknown: app.unknown, appSchema },
      `the app's schema "${appSchema}" records migrations that are not in the app's migrations directory (a newer version of the app applied them?)`,
    );
  }
}
