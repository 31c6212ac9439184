import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { PayhooksError } from '../errors.js';
import { assertSchemaName, type PayhooksDatabase } from './database.js';
import { quoteIdent } from './quote-ident.js';

/** The migrations shipped with payhooks (`migrations/` at the package root). */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

/** Where an app's own tables live unless told otherwise: where unqualified names go on a default server. */
export const DEFAULT_APP_SCHEMA = 'public';

/** The table, in the app's schema, that records which of the app's own migrations were applied. */
export const APP_MIGRATIONS_TABLE = 'payhooks_app_migrations';

const MIGRATION_FILE = /^(\d{3,})_[a-z0-9_]+\.sql$/;

/** One numbered SQL file. */
export interface MigrationFile {
  name: string;
  sql: string;
  checksum: string;
  /** Where it was read from (for messages); absent for files built in memory. */
  path?: string | undefined;
}

/** What {@link migrate} or {@link migrateApp} did. */
export interface MigrationReport {
  applied: string[];
  alreadyApplied: string[];
  /**
   * Recorded in the database but not among the files: a newer version migrated it. Always empty from
   * {@link migrate}, which refuses such a database ({@link UnknownMigrationsError}); {@link migrateApp} reports them.
   */
  unknown: string[];
}

/** An applied migration whose file has changed since: migrations only grow, so this stops the start. */
export class MigrationChecksumError extends PayhooksError {
  constructor(
    readonly migration: string,
    readonly recorded: string,
    readonly current: string,
    /** The file's path, when read from a directory. */
    readonly path?: string | undefined,
  ) {
    super(
      `Migration ${path ?? migration} was edited after it was applied (recorded checksum ${recorded.slice(0, 12)}…, file now ${current.slice(0, 12)}…). ` +
        'Applied migrations must never change: restore the file and put the change in a new numbered migration.',
    );
  }
}

/**
 * The database records payhooks migrations this version does not ship: a newer payhooks migrated it, and this
 * older code could write rows the newer schema no longer expects. Nothing is applied and nothing starts.
 */
export class UnknownMigrationsError extends PayhooksError {
  constructor(
    readonly schema: string,
    readonly migrations: readonly string[],
  ) {
    super(
      `The database schema "${schema}" was migrated by a newer version of payhooks: it records ${migrations.join(', ')}, ` +
        'which this version does not know. Refusing to start: upgrade payhooks or point at another schema (PAYHOOKS_SCHEMA, or database.schema).',
    );
  }
}

/**
 * Migrations refused through a transaction pooler (`database.pooler: 'transaction'`): a migration is a long
 * transaction of DDL under exclusive locks, which a pooler's timeouts may cut midway and behind which every pooled
 * client queues. Nothing was applied; the schema is as it was.
 */
export class PoolerMigrationError extends PayhooksError {
  constructor(
    readonly schema: string,
    readonly pending: readonly string[],
    /** What applies them: `payhooks migrate` for payhooks' and the app's; the mirror applies its own at start. */
    run = 'Run `payhooks migrate`',
  ) {
    super(
      `Refusing to migrate the schema "${schema}" through a transaction pooler (database.pooler: transaction, PAYHOOKS_DATABASE_POOLER): ` +
        `${pending.length} migration${pending.length === 1 ? ' is' : 's are'} pending (${pending.join(', ')}). ` +
        `${run} against the PostgreSQL server directly (DATABASE_URL naming the server, not PgBouncer, and PAYHOOKS_DATABASE_POOLER unset), then start again through the pooler.`,
    );
    this.name = 'PoolerMigrationError';
  }
}

/**
 * Reads the numbered `.sql` files of a folder, in order (`001_inbox.sql`, `002_…`): payhooks' own by default,
 * or an app's (`readMigrations('./migrations')`).
 *
 * @example
 * const files = readMigrations(new URL('./migrations/', import.meta.url));
 */
export function readMigrations(directory: string | URL = MIGRATIONS_DIR): MigrationFile[] {
  const dir = resolve(typeof directory === 'string' ? directory : fileURLToPath(directory));
  let isDirectory = false;
  try {
    isDirectory = statSync(dir).isDirectory();
  } catch {
    // reported below, with the path the caller gave
  }
  if (!isDirectory) throw new PayhooksError(`The migrations directory ${dir} does not exist or is not a directory.`);
  const names = readdirSync(dir).filter((name) => name.endsWith('.sql'));
  for (const name of names) {
    if (!MIGRATION_FILE.test(name)) {
      throw new PayhooksError(`Migration file ${name} in ${dir} is not named like 001_description.sql.`);
    }
  }
  return names.sort().map((name) => {
    const path = join(dir, name);
    const text = readFileSync(path, 'utf8');
    return { name, path, sql: text, checksum: createHash('sha256').update(text).digest('hex') };
  });
}

/**
 * Brings the payhooks schema up to date. Safe to run from several processes at once: a transaction-level
 * advisory lock lets one apply while the others wait, and then they find the work done. Everything runs in
 * one transaction, so a failing migration leaves the schema as it was. A schema migrated by a newer payhooks is
 * refused ({@link UnknownMigrationsError}) before anything is applied.
 *
 * @example
 * const store = await openDatabase({ url: process.env.DATABASE_URL });
 * const { applied } = await migrate(store);
 */
export async function migrate(store: PayhooksDatabase, files: readonly MigrationFile[] = readMigrations()): Promise<MigrationReport> {
  const schema = store.schema;
  return applyMigrations(store, files, {
    schema,
    searchPath: [schema],
    table: { schema, name: 'schema_migrations' },
    lock: `payhooks:migrate:${schema}`,
    onUnknown: (unknown) => {
      throw new UnknownMigrationsError(schema, unknown);
    },
  });
}

/** The migrations of the Postgres mirror (`migrations/mirror/`), applied in the mirror's own schema. */
export const MIRROR_MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/mirror/', import.meta.url));

/**
 * Brings the mirror's schema (default `payhooks_mirror`) up to date, with the same locking, checksums and
 * single transaction as {@link migrate}; applied migrations are recorded in `<mirrorSchema>.mirror_migrations`.
 * A mirror migrated by a newer payhooks is refused ({@link UnknownMigrationsError}).
 *
 * @example
 * await migrateMirror(store, 'payhooks_mirror');
 */
export async function migrateMirror(
  store: PayhooksDatabase,
  mirrorSchema: string,
  files: readonly MigrationFile[] = readMigrations(MIRROR_MIGRATIONS_DIR),
): Promise<MigrationReport> {
  assertSchemaName(mirrorSchema);
  return applyMigrations(store, files, {
    schema: mirrorSchema,
    searchPath: [mirrorSchema],
    table: { schema: mirrorSchema, name: 'mirror_migrations' },
    lock: `payhooks:migrate-mirror:${mirrorSchema}`,
    // `payhooks migrate` does not apply the mirror's: a serve (or backfill) does, as it starts the mirror.
    throughPooler: 'Start `payhooks serve` (or `payhooks backfill`) once, with the mirror on,',
    onUnknown: (unknown) => {
      throw new UnknownMigrationsError(mirrorSchema, unknown);
    },
  });
}

/** Options of {@link migrateApp}. */
export interface AppMigrationOptions {
  /** The schema the app's tables live in; created if missing. Default `public`. */
  appSchema?: string | undefined;
}

/**
 * Applies an app's OWN numbered SQL files (same naming rule, checksums and advisory locking as payhooks' own)
 * in the app's schema, run with `search_path` = `<appSchema>, public`: the same path `ctx.transaction` gives
 * handlers, so unqualified names in the files and in handlers mean the same tables. The applied set is recorded
 * in `<appSchema>.payhooks_app_migrations`, apart from payhooks' own, so the two numberings never collide.
 * Files recorded but no longer present (a newer app migrated the database) are reported in `unknown`.
 *
 * @example
 * await migrate(store);
 * await migrateApp(store, readMigrations('./migrations'), { appSchema: 'billing' });
 */
export async function migrateApp(
  store: PayhooksDatabase,
  files: readonly MigrationFile[],
  options: AppMigrationOptions = {},
): Promise<MigrationReport> {
  const appSchema = options.appSchema ?? DEFAULT_APP_SCHEMA;
  assertSchemaName(appSchema);
  return applyMigrations(store, files, {
    schema: appSchema,
    searchPath: appSearchPath(appSchema),
    table: { schema: appSchema, name: APP_MIGRATIONS_TABLE },
    lock: `payhooks:migrate-app:${appSchema}`,
  });
}

/** The search path of an app's migrations and of `ctx.transaction`: its schema first, then `public` (extensions). */
export function appSearchPath(appSchema: string): string[] {
  return appSchema === 'public' ? ['public'] : [appSchema, 'public'];
}

/** `set local search_path to …` for a list of schemas, quoted. */
export function setLocalSearchPath(schemas: readonly string[]): string {
  return `set local search_path to ${schemas.map(quoteIdent).join(', ')}`;
}

/**
 * The payhooks migrations recorded in the database that this version does not ship, read without changing
 * anything (for a start with `migrate: false`); empty when the schema was never migrated.
 */
export async function unknownMigrations(store: PayhooksDatabase, files: readonly MigrationFile[] = readMigrations()): Promise<string[]> {
  const table = `${quoteIdent(store.schema)}.schema_migrations`;
  const db = store.db.withoutPlugins();
  const { rows: exists } = await sql<{ present: boolean }>`select to_regclass(${table}) is not null as present`.execute(db);
  if (!exists[0]?.present) return [];
  const { rows } = await sql<{ name: string }>`select name from ${sql.raw(table)} order by name`.execute(db);
  const shipped = new Set(files.map((file) => file.name));
  return rows.map((row) => row.name).filter((name) => !shipped.has(name));
}

interface MigrationTarget {
  /** Created if missing; the files' unqualified names land here (first on the search path). */
  schema: string;
  searchPath: readonly string[];
  /** The table that records the applied files. */
  table: { schema: string; name: string };
  /** Names the advisory lock: migrators of the same target wait for each other, others do not. */
  lock: string;
  /** What the refusal through a transaction pooler tells to run directly ({@link PoolerMigrationError}). */
  throughPooler?: string | undefined;
  /** Called, inside the transaction and before anything is applied, when recorded files are missing. */
  onUnknown?: ((unknown: string[]) => void) | undefined;
}

/**
 * How long one migration run may take, applying its files included. Not the pool's query timeout (15 s by default,
 * meant for payhooks' short statements): a migration that carries data over takes longer on a large database
 * (migration 006 took 59 s for 1,000,000 events on a busy machine, see docs/storage.md), and would otherwise fail
 * with "Query read timeout" on every start.
 */
export const MIGRATION_TIMEOUT_MS = 60 * 60 * 1000;

async function applyMigrations(
  store: PayhooksDatabase,
  files: readonly MigrationFile[],
  target: MigrationTarget,
): Promise<MigrationReport> {
  const db = store.withDeadline(performance.now() + MIGRATION_TIMEOUT_MS).db.withoutPlugins();
  const table = sql.raw(`${quoteIdent(target.table.schema)}.${quoteIdent(target.table.name)}`);
  if (store.pooler === 'transaction') return checkedThroughPooler(store, files, target);
  return db.transaction().execute(async (trx) => {
    // payhooks' connections have the server stop a statement a moment after the pool's query timeout (database.ts);
    // a migration, and the wait for another process's, may take up to MIGRATION_TIMEOUT_MS, which the client bounds.
    await sql`set local statement_timeout = 0`.execute(trx);
    await sql`select pg_advisory_xact_lock(${advisoryKey(target.lock)}::bigint)`.execute(trx);
    for (const schema of new Set([target.schema, target.table.schema])) {
      await sql.raw(`create schema if not exists ${quoteIdent(schema)}`).execute(trx);
    }
    await sql`create table if not exists ${table} (
      name text primary key,
      checksum text not null,
      applied_at timestamptz not null default now()
    )`.execute(trx);
    const { rows } = await sql<{ name: string; checksum: string }>`select name, checksum from ${table} order by name`.execute(trx);
    const recorded = new Map(rows.map((row) => [row.name, row.checksum]));
    const shipped = new Set(files.map((file) => file.name));
    const unknown = [...recorded.keys()].filter((name) => !shipped.has(name));
    if (unknown.length) target.onUnknown?.(unknown);

    const report: MigrationReport = { applied: [], alreadyApplied: [], unknown };
    for (const file of files) {
      const checksum = recorded.get(file.name);
      if (checksum !== undefined) {
        if (checksum !== file.checksum) throw new MigrationChecksumError(file.name, checksum, file.checksum, file.path);
        report.alreadyApplied.push(file.name);
        continue;
      }
      // Migration files use unqualified names; the search path puts them in the target schema. Set before each
      // file, since a file may change it.
      await sql.raw(setLocalSearchPath(target.searchPath)).execute(trx);
      await sql.raw(file.sql).execute(trx);
      await sql`insert into ${table} (name, checksum) values (${file.name}, ${file.checksum})`.execute(trx);
      report.applied.push(file.name);
    }
    return report;
  });
}

/**
 * Through a transaction pooler: reads what is applied, takes no lock and changes nothing; a pending file is refused
 * ({@link PoolerMigrationError}), a schema up to date passes as it would have (all already applied).
 */
async function checkedThroughPooler(
  store: PayhooksDatabase,
  files: readonly MigrationFile[],
  target: MigrationTarget,
): Promise<MigrationReport> {
  const table = sql.raw(`${quoteIdent(target.table.schema)}.${quoteIdent(target.table.name)}`);
  const recorded = new Map<string, string>();
  try {
    const { rows } = await sql<{ name: string; checksum: string }>`select name, checksum from ${table}`.execute(store.db.withoutPlugins());
    for (const row of rows) recorded.set(row.name, row.checksum);
  } catch (err) {
    // A fresh database (no schema, no table): everything is pending.
    const code = (err as { code?: unknown }).code;
    if (code !== '42P01' && code !== '3F000') throw err;
  }
  const applied = new Set(recorded.keys());
  for (const file of files) {
    const checksum = recorded.get(file.name);
    if (checksum !== undefined && checksum !== file.checksum)
      throw new MigrationChecksumError(file.name, checksum, file.checksum, file.path);
  }
  const shipped = new Set(files.map((file) => file.name));
  const unknown = [...applied].filter((name) => !shipped.has(name));
  if (unknown.length) target.onUnknown?.(unknown);
  const pending = files.filter((file) => !applied.has(file.name)).map((file) => file.name);
  if (pending.length) throw new PoolerMigrationError(target.schema, pending, target.throughPooler);
  return { applied: [], alreadyApplied: files.map((file) => file.name), unknown };
}

/** A stable 64-bit lock key per name, so migrators of different targets do not wait on each other. */
function advisoryKey(name: string): string {
  return createHash('sha256').update(name).digest().readBigInt64BE(0).toString();
}
